//go:build e2e

package realmesos

import (
	"net/http"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// On real Mesos, with each namespace's tasks as a user of their own
// (mesos_task_users), search's task puts links and a FIFO in place of its
// own logs, aiming at pay's sandbox, the agent's checkpoints and the
// host's files; search's log reads through the scheduler (the agent's own
// /files API) return nothing of them, none hangs, and pay's log still
// reads as pay's.
func TestPlantedLinksOnRealMesos(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a Mesos agent switches to the task's user only as root")
	}
	for _, u := range []string{"nobody", "daemon"} {
		if _, err := user.Lookup(u); err != nil {
			t.Skipf("no user %s: %v", u, err)
		}
	}
	m := startMesos(t, mesosOpts{})
	for _, d := range []string{filepath.Dir(m.dir), m.dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cache := filepath.Join(m.dir, "cache")
	if err := os.Mkdir(cache, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(cache, 0o777); err != nil {
		t.Fatal(err)
	}
	s := startSchedulers(t, 1, schedOpts{mesosURL: m.masterURL(), name: "ej-hostile",
		extra: []string{"--mesos-task-users", "pay=daemon,search=nobody", "--executor-cache-dir", cache}})[0]
	s.must(http.MethodPut, "/api/namespaces/pay", nil)
	s.must(http.MethodPut, "/api/namespaces/search", nil)
	const payOutput = "PAY-OUTPUT-real-mesos-6f2a"
	put := func(path string, files map[string]string) string {
		b, err := harness.TarGz(harness.Scripts(files)...)
		if err != nil {
			t.Fatal(err)
		}
		apps.mu.Lock()
		apps.files[path] = b
		apps.mu.Unlock()
		return appServer.URL + path
	}
	run := func(ns, name, script string, shards int) {
		s.must(http.MethodPost, "/api/app?namespace="+ns, map[string]any{"appName": name,
			"appURL": put("/"+ns+"/"+name+".tar.gz", map[string]string{"bin/run.sh": script}), "bootstrapScript": "bin/run.sh",
			"cpuCount": 0.1, "memoryMB": 32})
		s.must(http.MethodPost, "/api/job/register?namespace="+ns, map[string]any{"jobName": name, "appName": name,
			"jobExecutionType": "TRANSIENT", "shardingTotalCount": shards, "cpuCount": 0.1, "memoryMB": 16})
		s.must(http.MethodPost, "/api/job/trigger?namespace="+ns, name)
	}
	run("pay", "holder", "#!/bin/sh\necho "+payOutput+"\nexec sleep 600\n", 1)
	var payTask, paySandbox string
	eventually(t, waitLong, func() bool {
		for _, f := range runFiles(m, "pay~holder@-@*", "tasks/*/stdout") {
			if b, _ := os.ReadFile(f); strings.Contains(string(b), payOutput) {
				payTask, paySandbox = filepath.Base(filepath.Dir(f)), filepath.Dir(filepath.Dir(filepath.Dir(f)))
				return true
			}
		}
		return false
	}, "pay's holder to run")
	meta := filepath.Join(m.agentDir(), "meta")
	script := `#!/bin/sh
OWN="$MESOS_SANDBOX/tasks/$ELASTICJOB_TASK_ID"
case "$ELASTICJOB_SHARDING_ITEM" in
0) mv "$OWN/stdout" "$OWN/x"; ln -s '` + filepath.Join(paySandbox, "tasks", payTask, "stdout") + `' "$OWN/stdout"
   ln -s '` + meta + `' "$MESOS_SANDBOX/meta"; ln -s /etc/shadow "$OWN/stderr" ;;
1) mv "$OWN/stdout" "$OWN/x"; mkfifo "$OWN/stdout"; ln -s /dev/zero "$OWN/stderr" ;;
2) mv "$OWN" "$OWN.x"; ln -s '` + filepath.Join(paySandbox, "tasks", payTask) + `' "$OWN" ;;
esac
echo planted > "$MESOS_SANDBOX/planted.$ELASTICJOB_SHARDING_ITEM"
exec sleep 600
`
	run("search", "links", script, 3)
	eventually(t, waitLong, func() bool {
		return len(runFiles(m, "search~links@-@*", "planted.*")) == 3
	}, "search's shards to plant their links")
	var running []struct {
		TaskID string `json:"taskId"`
	}
	eventually(t, waitLong, func() bool {
		code, body := s.do(http.MethodGet, "/api/job/tasks/running?namespace=search", nil)
		running = nil
		return code == http.StatusOK && jsonDecode(strings.NewReader(string(body)), &running) == nil && len(running) == 3
	}, "search's shards to run")
	client := &http.Client{Timeout: 60 * time.Second}
	api := harness.API{T: t, Base: s.base, Client: client}
	for _, r := range running {
		for _, stream := range []string{"stdout", "stderr"} {
			path := "/api/job/logs/" + url.PathEscape(r.TaskID) + "?namespace=search&full=true&stream=" + stream
			code, body := api.Do(http.MethodGet, path, nil)
			if strings.Contains(string(body), payOutput) || strings.Contains(string(body), "root:") {
				t.Errorf("CROSSED: GET %s (%d) returned pay's output or the host's shadow file", path, code)
			}
			if code == http.StatusOK && len(body) >= 1<<20 {
				t.Errorf("GET %s returned %d bytes of a device", path, len(body))
			}
		}
	}
	code, body := api.Do(http.MethodGet, "/api/job/logs/"+url.PathEscape(payTask)+"?namespace=pay&full=true", nil)
	if code != http.StatusOK || !strings.Contains(string(body), payOutput) {
		t.Errorf("pay's own log after the attack: %d %.300s", code, body)
	}
}

// runFiles are the files matching pattern in the sandboxes of the executors matching executor
// (the runs/latest links skipped).
func runFiles(c *mesosCluster, executor, pattern string) []string {
	files, _ := filepath.Glob(filepath.Join(c.agentDir(), "slaves/*/frameworks/*/executors", executor, "runs/*", pattern))
	out := files[:0]
	for _, f := range files {
		if !strings.Contains(f, "/runs/latest/") {
			out = append(out, f)
		}
	}
	return out
}
