//go:build e2e

package hostile

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

const (
	waitLong  = 90 * time.Second
	pollEvery = 50 * time.Millisecond
	// The suite's own uids, a block per world: the worlds run at once, and
	// another scheduler on this host (a parallel test tier) holds the
	// default range.
	uidBase, uidBlock = 1879117824, 4096
)

// The values pay's work holds, none of which may ever reach search: each
// world's own (the worlds run at once, and a world finds pay's task by
// its secret in /proc).
type payValues struct{ envSecret, fileSecret, output, metricsToken string }

func valuesOf(n int) payValues {
	return payValues{envSecret: fmt.Sprintf("PAY-DB-PASSWORD-hostile-4d1e-%d", n),
		fileSecret: fmt.Sprintf("PAY-TLS-KEY-hostile-9b07-%d", n), output: fmt.Sprintf("PAY-TASK-OUTPUT-hostile-21c5-%d", n),
		metricsToken: fmt.Sprintf("METRICS-TOKEN-hostile-77aa-%d", n)}
}

// world is two teams on one scheduler: pay holding secrets and a running
// task that uses them, search holding an edit token in its own namespace.
type world struct {
	payValues
	n       int // the world's number: its uid block, its values, its apps' paths
	t       *testing.T
	base    string
	data    string
	keyFile string
	key     string
	metrics string // the metrics token file
	sched   *harness.Proc
	admin   harness.API
	search  harness.API // search's edit token, nothing more

	payTaskID  string
	paySandbox string // pay's executor sandbox, as the host sees it
	payPid     int    // pay's task, which holds $DB_PASSWORD
	payRecords string // the agent's checkpoint of pay's TaskInfo
}

// newWorld builds a world whose namespaces take uids from block n, with
// the scheduler's flags and extra ones.
func newWorld(t *testing.T, n int, extra ...string) *world {
	if os.Geteuid() != 0 {
		t.Skip("the hostile-team tier needs root: tenant isolation runs each namespace as a user of its own")
	}
	t.Parallel()
	uidRange := fmt.Sprintf("%d-%d", uidBase+n*uidBlock, uidBase+(n+1)*uidBlock-1)
	base := t.TempDir()
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	w := &world{payValues: valuesOf(n), n: n, t: t, data: filepath.Join(base, "data"), keyFile: filepath.Join(base, "secrets.key"),
		metrics: filepath.Join(base, "metrics-token")}
	w.key = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))
	writeFile(t, w.keyFile, w.key+"\n", 0o600)
	writeFile(t, w.metrics, w.metricsToken+"\n", 0o600)
	port := harness.FreePort(t)
	w.base = fmt.Sprintf("http://127.0.0.1:%d", port)
	cmd := exec.Command(filepath.Join(binDir, "scheduler"), "--data-dir", w.data, "--http-port", strconv.Itoa(port),
		"--embedded-cpus", "2", "--embedded-mem-mb", "4096", "--tenant-isolation", "on", "--tenant-uid-range", uidRange,
		"--secrets-key-file", w.keyFile, "--metrics-token-file", w.metrics,
		"--auth-username", "admin", "--auth-password", "admin-pw-hostile")
	cmd.Args = append(cmd.Args, extra...)
	// A deployment's settings (its --config properties file, its limits),
	// after the suite's own: the world is built on them.
	cmd.Args = append(cmd.Args, strings.Fields(os.Getenv("EJ_HOSTILE_ARGS"))...)
	w.sched = harness.Start(t, "scheduler", filepath.Join(base, "scheduler.log"), cmd)
	t.Cleanup(func() {
		w.sched.Stop(t)
		harness.StopEverything(t, filepath.Join(w.data, "mesos"), filepath.Join(binDir, "scheduler"), "--data-dir", w.data)
		if t.Failed() {
			t.Logf("scheduler log:\n%s", harness.Tail(w.sched.Log(), 150))
		}
	})
	w.sched.AwaitReady(t, waitLong, pollEvery, harness.Healthy(http.DefaultClient, w.base), "scheduler %s to answer /healthz", w.base)
	w.admin = harness.API{T: t, Base: w.base, Client: http.DefaultClient,
		Auth: func(r *http.Request) { r.SetBasicAuth("admin", "admin-pw-hostile") }}
	w.admin.Must(http.MethodPut, "/api/namespaces/pay", nil)
	w.admin.Must(http.MethodPut, "/api/namespaces/search", nil)
	var tok struct{ Token string }
	if err := json.Unmarshal(w.admin.Must(http.MethodPost, "/api/namespaces/search/tokens",
		map[string]string{"name": "attacker", "role": "edit"}), &tok); err != nil || tok.Token == "" {
		t.Fatalf("search's token: %v %+v", err, tok)
	}
	bearer := "Bearer " + tok.Token
	w.search = harness.API{T: t, Base: w.base, Client: &http.Client{Timeout: 30 * time.Second},
		Auth: func(r *http.Request) { r.Header.Set("Authorization", bearer) }}
	w.startPay()
	return w
}

// startPay runs pay's holder: it prints its output marker, keeps a SysV
// shared memory segment, and sleeps with both secrets delivered.
func (w *world) startPay() {
	t := w.t
	w.admin.Must(http.MethodPut, "/api/namespaces/pay/secrets/db-password", map[string]any{"value": w.envSecret})
	w.admin.Must(http.MethodPut, "/api/namespaces/pay/secrets/tls-key", map[string]any{"value": w.fileSecret})
	hold := "#!/bin/sh\necho " + w.output + "\necho \"shm $(ipcmk -M 4096 -p 0600 2>&1)\"\n" +
		"echo \"$DB_PASSWORD\" > /dev/null\nexec sleep 600\n"
	url := apps.put(fmt.Sprintf("/w%d/pay/hold.tar.gz", w.n), tarGz(t, map[string]string{"bin/hold.sh": hold}))
	w.admin.Must(http.MethodPost, "/api/app?namespace=pay", map[string]any{"appName": "payapp", "appURL": url,
		"bootstrapScript": "bin/hold.sh", "cpuCount": 0.05, "memoryMB": 32})
	w.admin.Must(http.MethodPost, "/api/job/register?namespace=pay", map[string]any{"jobName": "holder", "appName": "payapp",
		"jobExecutionType": "TRANSIENT", "cron": "0 0 0 1 1 ? 2099", "shardingTotalCount": 1, "cpuCount": 0.05, "memoryMB": 16,
		"secrets": []map[string]string{{"name": "db-password", "env": "DB_PASSWORD"}, {"name": "tls-key", "file": "tls/server.key"}}})
	w.admin.Must(http.MethodPost, "/api/job/trigger?namespace=pay", "holder")
	harness.Eventually(t, waitLong, pollEvery, func() bool {
		w.payPid = harness.PidWithEnv("DB_PASSWORD=" + w.envSecret)
		return w.payPid > 0
	}, "pay's holder to run with its secret")
	w.paySandbox = harness.EnvOf(w.payPid, "MESOS_SANDBOX")
	w.payTaskID = harness.EnvOf(w.payPid, "ELASTICJOB_TASK_ID")
	if w.paySandbox == "" || w.payTaskID == "" {
		t.Fatalf("pay's task %d: sandbox %q task %q", w.payPid, w.paySandbox, w.payTaskID)
	}
	if !harness.Poll(waitLong, pollEvery, func() bool {
		m, _ := filepath.Glob(filepath.Join(w.data, "mesos", "meta", "slaves", "*", "frameworks", "*", "executors", "*",
			"runs", "*", "tasks", w.payTaskID+".records"))
		if len(m) > 0 {
			w.payRecords = m[0]
		}
		b, _ := os.ReadFile(filepath.Join(w.paySandbox, "tasks", w.payTaskID, "secrets", "tls", "server.key"))
		return w.payRecords != "" && string(b) == w.fileSecret
	}) {
		var files []string
		_ = filepath.WalkDir(filepath.Join(w.data, "mesos"), func(p string, _ os.DirEntry, _ error) error {
			files = append(files, p)
			return nil
		})
		t.Fatalf("pay's checkpoint (%q) and file secret never showed; the agent's files:\n%s", w.payRecords, strings.Join(files, "\n"))
	}
}

// attack publishes search's app with the given scripts (bin/NAME) and
// runs job as shards of script, returning the job's name.
func (w *world) attack(job, script string, shards int, files map[string]string) {
	t := w.t
	url := apps.put(fmt.Sprintf("/w%d/search/%s.tar.gz", w.n, job), tarGz(t, files))
	w.search.Must(http.MethodPost, "/api/app?namespace=search", map[string]any{"appName": job, "appURL": url,
		"bootstrapScript": script, "cpuCount": 0.05, "memoryMB": 32})
	w.search.Must(http.MethodPost, "/api/job/register?namespace=search", map[string]any{"jobName": job, "appName": job,
		"jobExecutionType": "TRANSIENT", "cron": "0 0 0 1 1 ? 2099", "shardingTotalCount": shards,
		"cpuCount": 0.01, "memoryMB": 16})
	w.search.Must(http.MethodPost, "/api/job/trigger?namespace=search", job)
}

// sandboxFile is a file of search's executor sandbox of app, read by the
// test as root once it holds want ("" until then).
func (w *world) sandboxFile(app, name, want string) string {
	m, _ := filepath.Glob(filepath.Join(w.data, "mesos", "slaves", "*", "frameworks", "*", "executors",
		"search~"+app+"@-@*", "runs", "*", name))
	for _, p := range m {
		if strings.Contains(p, "/runs/latest/") {
			continue
		}
		if b, _ := os.ReadFile(p); strings.Contains(string(b), want) {
			return string(b)
		}
	}
	return ""
}

// secretsIn names what of pay's and the scheduler's secrets s holds.
func (w *world) secretsIn(s string) []string {
	var found []string
	for name, v := range map[string]string{"pay's env secret": w.envSecret, "pay's file secret": w.fileSecret,
		"pay's task output": w.output, "the metrics token": w.metricsToken, "the secrets key": w.key,
		"a SQLite database": "SQLite format 3", "pay's task id": w.payTaskID, "/etc/shadow": "root:*:",
		"pay's namespace": "pay~"} {
		if v != "" && strings.Contains(s, v) {
			found = append(found, name)
		}
	}
	return found
}

func writeFile(t *testing.T, p, body string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}

func tarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	b, err := harness.TarGz(harness.Scripts(files)...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// stdouts are the stdout files of search's tasks of app that hold end.
func (w *world) stdouts(app, end string) []string { return w.taskFiles(app, "stdout", end) }

// taskFiles are the files name of search's tasks of app that hold end.
func (w *world) taskFiles(app, name string, end ...string) []string {
	var out []string
	m, _ := filepath.Glob(filepath.Join(w.data, "mesos", "slaves", "*", "frameworks", "*", "executors",
		"search~"+app+"@-@*", "runs", "*", "tasks", "*", name))
	for _, p := range m {
		if strings.Contains(p, "/runs/latest/") { // a link to the newest run, listed already
			continue
		}
		if b, _ := os.ReadFile(p); len(end) == 0 || strings.Contains(string(b), end[0]) {
			out = append(out, string(b))
		}
	}
	return out
}
