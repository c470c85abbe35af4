//go:build e2e

package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// With tenant isolation on (the scheduler runs as root), a job of
// namespace search tries every way to pay's secret it has on the host —
// other processes' /proc environ and cmdline, the secrets key file, the
// data directory and its databases, pay's sandbox, signals to pay's task —
// while pay's job holds the secret as $DB_PASSWORD, and gets nothing: the
// value is never in search's output, and pay's job survives. On the host,
// the data directory and key file are root's alone and each sandbox its
// namespace's user's.
func TestTenantIsolationKeepsNamespacesApart(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("tenant isolation needs the scheduler to run as root")
	}
	t.Parallel()
	// The executor runs as the namespaces' users: the directory the e2e
	// binaries were built in must let them through.
	if err := os.Chmod(filepath.Dir(filepath.Dir(schedulerBin)), 0o711); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	data, keyFile := filepath.Join(base, "data"), filepath.Join(base, "secrets.key")
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o644); err != nil { // too open: the scheduler closes it
		t.Fatal(err)
	}
	s := startScheduler(t, schedOpts{dataDir: data, extra: []string{"--tenant-isolation", "on", "--secrets-key-file", keyFile}})
	s.must(http.MethodPut, "/api/namespaces/pay", nil)
	s.must(http.MethodPut, "/api/namespaces/search", nil)
	var nss []struct {
		Name            string `json:"name"`
		TenantIsolation struct{ Mode, Reason string }
	}
	s.getJSON("/api/namespaces", &nss)
	for _, ns := range nss {
		if ns.TenantIsolation.Mode != "on" {
			t.Errorf("namespace %s: tenantIsolation %+v, want mode on", ns.Name, ns.TenantIsolation)
		}
	}

	const value = "PAY-DB-PASSWORD-e2e-7f3c91"
	s.must(http.MethodPut, "/api/namespaces/pay/secrets/db-password", map[string]any{"value": value})
	for _, ns := range []string{"pay", "search"} {
		s.must(http.MethodPost, "/api/app?namespace="+ns, map[string]any{"appName": "rec", "appURL": appServer.URL + servedPath,
			"bootstrapScript": "bin/record.sh", "cpuCount": 0.1, "memoryMB": 32})
	}
	s.must(http.MethodPost, "/api/job/register?namespace=pay", map[string]any{"jobName": "holder", "appName": "rec",
		"shardingTotalCount": 1, "cpuCount": 0.1, "memoryMB": 16, "jobType": "SCRIPT",
		"props":   map[string]string{"script.command.line": "sh -c \"exec sleep 300\""},
		"secrets": []map[string]string{{"name": "db-password", "env": "DB_PASSWORD"}}})
	s.must(http.MethodPost, "/api/job/trigger?namespace=pay", "holder")
	var payPid int
	eventually(t, waitLong, func() bool { payPid = harness.PidWithEnv("DB_PASSWORD=" + value); return payPid > 0 },
		"pay's holder to run with its secret")
	paySandbox := harness.EnvOf(payPid, "MESOS_SANDBOX")
	if paySandbox == "" {
		t.Fatalf("pay's task %d has no MESOS_SANDBOX", payPid)
	}

	probe := strings.Join([]string{
		`echo "uid=$(id -u) gid=$(id -g)"`,
		`echo "procs: $(ls /proc | grep -E '^[0-9]+$' | tr '\n' ' ')"`,
		`for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do echo "== $f"; tr '\0' ' ' < "$f"; echo; done`,
		`echo "key: $(cat ` + keyFile + ` 2>&1)"`,
		`echo "data: $(ls -A ` + data + ` 2>&1 | tr '\n' ' ')"`,
		`for db in registry.db trace.db; do echo "db $db: $(head -c 64 ` + data + `/$db 2>&1)"; done`,
		`echo "pay sandbox: $(ls -A ` + paySandbox + ` 2>&1 | tr '\n' ' ')"`,
		`cat ` + paySandbox + `/stdout ` + paySandbox + `/stderr 2>&1`,
		`echo "executors: $(ls -A ` + filepath.Dir(filepath.Dir(filepath.Dir(paySandbox))) + ` 2>&1 | tr '\n' ' ')"`,
		`kill -9 ` + strconv.Itoa(payPid) + ` 2>&1 && echo "KILL""ED"`,
		`echo "end-of""-probe"`, // split: the script's own cmdline, printed above, must not end the wait
	}, "; ")
	s.must(http.MethodPost, "/api/job/register?namespace=search", map[string]any{"jobName": "probe", "appName": "rec",
		"shardingTotalCount": 1, "cpuCount": 0.1, "memoryMB": 16, "jobType": "SCRIPT",
		"props": map[string]string{"script.command.line": probe}})
	s.must(http.MethodPost, "/api/job/trigger?namespace=search", "probe")
	var out string
	eventually(t, waitLong, func() bool { out = taskOutput(data, "search~rec", "end-of-probe"); return out != "" },
		"search's probe to finish")
	defer func() {
		if t.Failed() {
			t.Logf("search's probe saw:\n%s", harness.Tail(out, 100))
		}
	}()

	if strings.Contains(out, value) {
		t.Errorf("search's job read pay's secret")
	}
	if strings.Contains(out, key) {
		t.Errorf("search's job read the secrets key")
	}
	listed := regexp.MustCompile(`(?m)^data: (.*)$`).FindStringSubmatch(out)
	if strings.Contains(out, "SQLite format 3") || listed == nil || strings.Contains(listed[1], ".db") {
		t.Errorf("search's job read or listed the scheduler's databases: %v", listed)
	}
	if m := regexp.MustCompile(`(?m)^executors: (.*)$`).FindStringSubmatch(out); m == nil || strings.Contains(m[1], "pay~") {
		t.Errorf("search's job listed pay's sandboxes: %v", m)
	}
	if strings.Contains(out, "KILLED") {
		t.Errorf("search's job killed pay's task %d", payPid)
	}
	if m := regexp.MustCompile(`uid=(\d+) gid=(\d+)`).FindStringSubmatch(out); m == nil || m[1] == "0" || m[2] == "0" {
		t.Errorf("search's job ran as %v, not a user of its own", m)
	}
	if m := regexp.MustCompile(`procs: ([0-9 ]*)`).FindStringSubmatch(out); m == nil || len(strings.Fields(m[1])) > 12 ||
		strings.Contains(" "+m[1], " "+strconv.Itoa(payPid)+" ") {
		t.Errorf("search's job sees processes beyond its own: %v", m)
	}
	if !alive(payPid) {
		t.Errorf("pay's task %d did not survive search's job", payPid)
	}

	// On the host: the data directory and key file root's alone; each
	// sandbox its namespace's user's, closed to others.
	for p, want := range map[string]os.FileMode{data: 0o700, keyFile: 0o600} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != want || st.Sys().(*syscall.Stat_t).Uid != 0 {
			t.Errorf("%s: %v %v, want root's with mode %o", p, st.Mode(), err, want)
		}
	}
	payUID := ownerOf(t, paySandbox)
	if st, err := os.Stat(paySandbox); err != nil || st.Mode().Perm() != 0o700 || payUID == 0 {
		t.Errorf("pay's sandbox %s: %v uid %d, want mode 0700 and pay's user", paySandbox, st.Mode(), payUID)
	}
	var book map[string]int
	if b, err := os.ReadFile(filepath.Join(data, "mesos", "tenants.json")); err == nil {
		_ = json.Unmarshal(b, &book)
	}
	if book["pay"] != payUID || book["search"] == 0 || book["search"] == payUID {
		t.Errorf("tenants.json %v: pay's sandbox is uid %d", book, payUID)
	}
}

// taskOutput is the stdout of a task of the executor whose id starts
// with executor, once it holds end ("" until then).
func taskOutput(data, executor, end string) string {
	var out string
	_ = filepath.WalkDir(filepath.Join(data, "mesos"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "stdout" || !strings.Contains(p, "/executors/"+executor) {
			return nil
		}
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(end)) {
			out = string(b)
		}
		return nil
	})
	return out
}

func ownerOf(t *testing.T, p string) int {
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return int(st.Sys().(*syscall.Stat_t).Uid)
}
