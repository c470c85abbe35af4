package ejctl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
)

func write(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const multiDoc = `kind: App
appName: demo
appURL: http://repo/demo.tar.gz
bootstrapScript: bin/start.sh
cpuCount: 0.5
---
kind: Job
jobName: nightly
appName: demo
cron: "0 0 2 * * ?"
shardingTotalCount: 3
props:
  webhook.url: http://hook/x
pauseAfterFailures: 3
`

func TestLoadManifests(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.yaml", multiDoc)
	write(t, dir, "more/b.json", `{"apps":[{"appName":"other","bootstrapScript":"run.sh"}],"jobs":[{"jobName":"hourly","appName":"other","cron":"0 0 * * * ?"}]}`)
	write(t, dir, "more/c.yml", "- jobName: listed\n  appName: demo\n- jobName: listed2\n  appName: demo\n")
	write(t, dir, "notes.txt", "ignored")
	m, err := LoadManifests([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Apps) != 2 || m.Apps[0].AppName != "demo" || m.Apps[1].AppName != "other" || m.Apps[1].AppURL != "" {
		t.Fatalf("apps %+v", m.Apps)
	}
	if m.Apps[0].MemoryMB != app.DefaultMemoryMB || m.Apps[0].CPUCount != 0.5 || !m.Apps[0].AppCacheEnable {
		t.Errorf("app defaults not filled: %+v", m.Apps[0])
	}
	names := []string{}
	for _, j := range m.Jobs {
		names = append(names, j.JobName)
	}
	if strings.Join(names, ",") != "hourly,listed,listed2,nightly" {
		t.Fatalf("jobs %v", names)
	}
	n := m.Jobs[3]
	if n.ShardingTotalCount != 3 || n.JobExecutionType != jobs.Transient || n.CPUCount != 1 || n.Props["webhook.url"] != "http://hook/x" || n.PauseAfterFailures != 3 {
		t.Errorf("nightly %+v", n)
	}
}

func TestManifestErrorsNameTheFile(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{"jobName: j\nappName: a\ncronn: x\n", `unknown field "cronn"`},
		{"jobName: j\nappName: a\ncron: \"0 0 0 30 2 ? x\"\n", "cron"},
		{"kind: Thing\nname: x\n", `kind must be App or Job, got "thing"`},
		{"jobName: j\nappName: a\n---\njobName: j\nappName: a\n", "job j is declared twice"},
		{"appName: a\nappURL: ftp://x\nbootstrapScript: s\n", "appURL"},
		{"jobs: {a: 1}\n", "jobs must be a list"},
		{"jobName: [\n", "a.yaml"},
	} {
		dir := t.TempDir()
		p := write(t, dir, "a.yaml", c.body)
		_, err := LoadManifests([]string{p})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "a.yaml") {
			t.Errorf("%q: error %v, want one naming a.yaml and %q", c.body, err, c.want)
		}
	}
}

func TestDiffAndUpdateBody(t *testing.T) {
	cur := jobs.Default()
	cur.JobName, cur.AppName, cur.Cron, cur.TimeoutSeconds = "j", "a", "0/5 * * * * ?", 30
	cur.Props = map[string]string{"keep": "1", "drop": "x"}
	want := cur
	want.Cron, want.TimeoutSeconds = "0/10 * * * * ?", 0
	want.Props = map[string]string{"keep": "1", "add": "y"}
	d, err := Diff(cur, want)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range d {
		got = append(got, x.String())
	}
	wantDiff := []string{`cron: "0/5 * * * * ?" → "0/10 * * * * ?"`, `props.add: (absent) → "y"`, `props.drop: "x" → (absent)`, `timeoutSeconds: 30 → (absent)`}
	if strings.Join(got, "\n") != strings.Join(wantDiff, "\n") {
		t.Fatalf("diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantDiff, "\n"))
	}
	if d, _ := Diff(cur, cur); len(d) != 0 {
		t.Errorf("a config differs from itself: %v", d)
	}
	body, err := updateBody(cur, want)
	if err != nil {
		t.Fatal(err)
	}
	if body["timeoutSeconds"] != 0 || body["cron"] != "0/10 * * * * ?" {
		t.Errorf("update body must reset the omitted timeoutSeconds: %v", body)
	}
}

func TestPlanPrune(t *testing.T) {
	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript = "kept", "http://scheduler/packages/abc/t/kept.tar.gz", "bin/start.sh"
	old := a
	old.AppName = "old"
	j := jobs.Default()
	j.JobName, j.AppName = "j1", "kept"
	gone := j
	gone.JobName, gone.AppName = "gone", "old"
	cur := current{apps: map[string]app.Config{"kept": a, "old": old}, jobs: map[string]jobs.Config{"j1": j, "gone": gone}}

	declared := a
	declared.AppURL = "" // published by ejctl app publish: the URL is kept
	m := Manifest{Apps: []app.Config{declared}, Jobs: []jobs.Config{j}}
	p, err := MakePlan(m, cur, true)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ch := range p.Changes {
		got = append(got, ch.Action+" "+ch.Kind+" "+ch.Name)
	}
	if strings.Join(got, ", ") != "unchanged app kept, unchanged job j1, delete job gone, delete app old" {
		t.Fatalf("plan %v", got)
	}
	// A job of the files using an app the files leave out: refused.
	m.Apps = nil
	if _, err := MakePlan(m, cur, true); err == nil || !strings.Contains(err.Error(), "job j1 of the files uses") {
		t.Fatalf("prune of a used app: %v", err)
	}
}

// TestManifestPodTemplate: a job's podTemplate in YAML loads as the JSON the API keeps, so
// applying the same file again changes nothing.
func TestManifestPodTemplate(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "j.yaml", `kind: Job
jobName: reads
appName: demo
podTemplate:
  spec:
    serviceAccountName: pay
    containers:
    - name: task
      env:
      - name: DB_PASSWORD
        valueFrom: {secretKeyRef: {name: db, key: password}}
`)
	m, err := LoadManifests([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	got := string(m.Jobs[0].PodTemplate)
	if !strings.Contains(got, `"serviceAccountName":"pay"`) || !strings.Contains(got, `"secretKeyRef":{"key":"password","name":"db"}`) {
		t.Fatalf("podTemplate %s", got)
	}
	same := m.Jobs[0]
	same.PodTemplate = app.PodTemplate(got)
	if d, err := Diff(same, m.Jobs[0]); err != nil || len(d) != 0 {
		t.Errorf("diff of the same template: %v %v", d, err)
	}
	other := m.Jobs[0]
	other.PodTemplate = app.PodTemplate(`{"spec":{"serviceAccountName":"other"}}`)
	if d, err := Diff(m.Jobs[0], other); err != nil || len(d) == 0 {
		t.Errorf("a changed template shows no diff: %v", err)
	}
}
