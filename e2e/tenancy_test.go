//go:build e2e

package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// usersFile writes a users file as an operator would: each password
// hashed by the real `htpasswd -nbB` (apache2-utils), pasted whole.
func usersFile(t *testing.T, users map[string][2]string) string {
	t.Helper()
	bin, err := exec.LookPath("htpasswd")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("htpasswd is missing (apt-get install apache2-utils; scripts/services.sh install does)")
		}
		t.Skip("htpasswd is missing: apt-get install apache2-utils")
	}
	var b strings.Builder
	b.WriteString("users:\n")
	for name, pw := range users {
		out, err := exec.Command(bin, "-nbB", name, pw[0]).Output()
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("  - name: " + name + "\n    password: '" + strings.TrimSpace(string(out)) + "'\n    namespaces: " + pw[1] + "\n")
	}
	p := filepath.Join(t.TempDir(), "users.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// as is the scheduler's API as one user.
func (s *scheduler) as(user, pass string) harness.API {
	return harness.API{T: s.t, Base: s.base, Client: http.DefaultClient, Auth: func(r *http.Request) { r.SetBasicAuth(user, pass) }}
}

// Two teams share one scheduler: each has a job called nightly (and an app
// called rec), each triggers its own, and each run is the team's own: its
// shards see their name and namespace, their task ids carry it, and the
// runs, logs and history of one team are not the other's to read. The
// original's curls, without a namespace, are the default namespace's.
func TestTwoTeamsOneScheduler(t *testing.T) {
	t.Parallel()
	users := usersFile(t, map[string][2]string{"alice": {"a-secret", "{pay: edit}"}, "bob": {"b-secret", "{search: edit}"}})
	metricsToken := filepath.Join(t.TempDir(), "metrics-token")
	if err := os.WriteFile(metricsToken, []byte("e2e-metrics-token-0123456789\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	// no metrics_access: with a users file, /metrics asks for a login by default (issue 50)
	s := startScheduler(t, schedOpts{extra: []string{"--auth-username", "admin", "--auth-password", "s3cret", "--auth-users-file", users,
		"--metrics-token-file", metricsToken}})
	s.auth = func(r *http.Request) { r.SetBasicAuth("admin", "s3cret") }
	s.must(http.MethodPut, "/api/namespaces/pay", map[string]any{"limit": map[string]any{"cpuCount": 2, "memoryMB": 2048}})
	s.must(http.MethodPut, "/api/namespaces/search", nil)

	outs := map[string]string{}
	teams := map[string]harness.API{"default": s.api(), "pay": s.as("alice", "a-secret"), "search": s.as("bob", "b-secret")}
	for ns, api := range teams {
		q := ""
		if ns != "default" {
			q = "?namespace=" + ns
		}
		outs[ns] = outDir(t)
		api.Must(http.MethodPost, "/api/app"+q, map[string]any{"appName": "rec", "appURL": fileURL(recorderTGZ), "bootstrapScript": "bin/record.sh",
			"cpuCount": 0.1, "memoryMB": 32})
		api.Must(http.MethodPost, "/api/job/register"+q, map[string]any{"jobName": "nightly", "appName": "rec", "shardingTotalCount": 2,
			"cpuCount": 0.1, "memoryMB": 16, "jobType": "SCRIPT",
			"props": map[string]string{"script.command.line": `echo "$ELASTICJOB_NAMESPACE $ELASTICJOB_JOB_NAME $ELASTICJOB_TASK_ID" >> ` + outs[ns] + `/runs; echo "out of ` + ns + `"`}})
		api.Must(http.MethodPost, "/api/job/trigger"+q, "nightly")
	}
	lines := map[string][]string{}
	for ns := range teams {
		eventually(t, waitLong, func() bool {
			b, _ := os.ReadFile(filepath.Join(outs[ns], "runs"))
			lines[ns] = strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", " | "))
			return strings.Count(string(b), "\n") >= 2
		}, "both shards of %s's nightly to run", ns)
	}
	var payTask string
	for ns := range teams {
		b, _ := os.ReadFile(filepath.Join(outs[ns], "runs"))
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			f := strings.Fields(l)
			prefix := "nightly@-@"
			if ns != "default" {
				prefix = ns + "~nightly@-@"
			}
			if len(f) != 3 || f[0] != ns || f[1] != "nightly" || !strings.HasPrefix(f[2], prefix) {
				t.Errorf("%s's shard ran as %q, want namespace %s, job nightly, a task id starting %s", ns, l, ns, prefix)
			}
			if ns == "pay" {
				payTask = f[2]
			}
		}
	}
	// History: each team reads its own executions, by the name it knows.
	alice, bob := teams["pay"], teams["search"]
	var page struct {
		Total int `json:"total"`
		Rows  []struct {
			JobName, TaskID string
		} `json:"rows"`
	}
	eventually(t, waitLong, func() bool {
		_ = json.Unmarshal(alice.Must(http.MethodGet, "/api/job/events/executions?namespace=pay&jobName=nightly", nil), &page)
		return page.Total == 2
	}, "pay's two executions in its history")
	for _, r := range page.Rows {
		if r.JobName != "nightly" || !strings.HasPrefix(r.TaskID, "pay~nightly@-@") {
			t.Errorf("pay's history row %+v", r)
		}
	}
	eventually(t, waitLong, func() bool {
		_ = json.Unmarshal(s.must(http.MethodGet, "/api/job/events/executions?jobName=nightly", nil), &page)
		return page.Total == 2
	}, "default's two executions (the original's curl, no namespace)")
	for _, r := range page.Rows {
		if strings.Contains(r.TaskID, "~") {
			t.Errorf("default's history holds %+v", r)
		}
	}
	// Metrics (metrics_access auto with a users file: a login): each team scrapes its own
	// namespace's series alone; the metrics token (Prometheus's) every series.
	for ns, api := range map[string]harness.API{"pay": alice, "search": bob} {
		other := map[string]string{"pay": "search", "search": "pay"}[ns]
		eventually(t, waitLong, func() bool {
			code, body := api.Do(http.MethodGet, "/metrics", nil)
			return code == http.StatusOK && strings.Contains(string(body), `elasticjob_tasks_launched_total{job="nightly",namespace="`+ns+`"} 2`)
		}, "%s's scrape to count its two launches", ns)
		if _, body := api.Do(http.MethodGet, "/metrics", nil); strings.Contains(string(body), `namespace="`+other+`"`) || strings.Contains(string(body), "go_goroutines") {
			t.Errorf("%s's scrape holds %s's or the operator's series:\n%s", ns, other, body)
		}
	}
	if code, _ := (harness.API{T: t, Base: s.base, Client: http.DefaultClient}).Do(http.MethodGet, "/metrics", nil); code != http.StatusUnauthorized {
		t.Errorf("a scrape without credentials: %d, want 401", code)
	}
	if code, body := s.api().Do(http.MethodGet, "/metrics", nil); code != http.StatusOK || !strings.Contains(string(body), "go_goroutines") {
		t.Errorf("the admin's scrape: %d, want every series", code)
	}
	prom := harness.API{T: t, Base: s.base, Client: http.DefaultClient, Auth: func(r *http.Request) { r.SetBasicAuth("metrics", "e2e-metrics-token-0123456789") }}
	if code, body := prom.Do(http.MethodGet, "/metrics", nil); code != http.StatusOK || !strings.Contains(string(body), "go_goroutines") ||
		!strings.Contains(string(body), `namespace="pay"`) || !strings.Contains(string(body), `namespace="search"`) {
		t.Errorf("the metrics token's scrape: %d, want every series", code)
	}
	// Logs: alice reads her shard's output; bob can neither in pay nor by
	// naming pay's task id in his own namespace.
	esc := url.PathEscape(payTask)
	eventually(t, waitLong, func() bool {
		code, body := alice.Do(http.MethodGet, "/api/job/logs/"+esc+"?namespace=pay&stream=stdout&full=true", nil)
		return code == http.StatusOK && strings.Contains(string(body), "out of pay")
	}, "alice to read pay's task log")
	if code, body := bob.Do(http.MethodGet, "/api/job/logs/"+esc+"?namespace=pay", nil); code != http.StatusForbidden {
		t.Errorf("bob reads pay's log in pay: %d %s", code, body)
	}
	if code, body := bob.Do(http.MethodGet, "/api/job/logs/"+esc+"?namespace=search&stream=stdout&full=true", nil); code != http.StatusNotFound || strings.Contains(string(body), "out of pay") {
		t.Errorf("bob reads pay's log through search: %d %s", code, body)
	}
	if code, body := bob.Do(http.MethodDelete, "/api/job/nightly/deregister?namespace=pay", nil); code != http.StatusForbidden {
		t.Errorf("bob deregisters pay's job: %d %s", code, body)
	}
	// Deleting search's job leaves pay's and default's.
	bob.Must(http.MethodDelete, "/api/job/nightly/deregister?namespace=search", nil)
	if code, _ := alice.Do(http.MethodGet, "/api/job/jobs/nightly?namespace=pay", nil); code != http.StatusOK {
		t.Errorf("pay's job went with search's: %d", code)
	}
	if code, _ := s.do(http.MethodGet, "/api/job/jobs/nightly", nil); code != http.StatusOK {
		t.Errorf("default's job went with search's: %d", code)
	}
	// The namespace's usage; a delete refused while it holds anything.
	var ns struct {
		Usage struct{ Apps, Jobs int }
	}
	_ = json.Unmarshal(s.must(http.MethodGet, "/api/namespaces/pay", nil), &ns)
	if ns.Usage.Apps != 1 || ns.Usage.Jobs != 1 {
		t.Errorf("pay's usage %+v", ns)
	}
	if code, body := s.do(http.MethodDelete, "/api/namespaces/pay", nil); code != http.StatusConflict || !strings.Contains(string(body), "1 app (rec), 1 job (nightly)") {
		t.Errorf("delete pay: %d %s", code, body)
	}
}
