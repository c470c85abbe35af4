//go:build e2e

package e2e

import (
	"bytes"
	"encoding/base64"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A namespace's secret reaches its job's shards, as an environment
// variable and as a file of mode 0400 that is gone when the task ends,
// from a real scheduler and executor; it is stored sealed (no file of the
// data directory holds it), is never in the scheduler's log or the task's
// log, and another namespace can neither see nor name it.
func TestSecretsReachTheTask(t *testing.T) {
	t.Parallel()
	users := usersFile(t, map[string][2]string{"alice": {"a-secret", "{pay: edit}"}, "bob": {"b-secret", "{search: edit}"}})
	keyFile := filepath.Join(t.TempDir(), "secrets.key")
	if err := os.WriteFile(keyFile, []byte("k1:"+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{42}, 32))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startScheduler(t, schedOpts{extra: []string{"--auth-username", "admin", "--auth-password", "s3cret",
		"--auth-users-file", users, "--secrets-key-file", keyFile}})
	s.auth = func(r *http.Request) { r.SetBasicAuth("admin", "s3cret") }
	s.must(http.MethodPut, "/api/namespaces/pay", nil)
	s.must(http.MethodPut, "/api/namespaces/search", nil)
	alice, bob := s.as("alice", "a-secret"), s.as("bob", "b-secret")

	const value = "S3CR3T-of-pay-e2e-51a9"
	alice.Must(http.MethodPut, "/api/namespaces/pay/secrets/db", map[string]any{"value": value})
	out := outDir(t)
	alice.Must(http.MethodPost, "/api/app?namespace=pay", map[string]any{"appName": "rec", "appURL": fileURL(recorderTGZ), "bootstrapScript": "bin/record.sh",
		"cpuCount": 0.1, "memoryMB": 32})
	script := `printf %s "$DB_PW" > ` + out + `/env; cat "$ELASTICJOB_SECRETS_DIR/conf/db.pass" > ` + out + `/file; ` +
		`stat -c %a "$ELASTICJOB_SECRETS_DIR/conf/db.pass" > ` + out + `/mode; echo "$ELASTICJOB_SECRETS_DIR" > ` + out + `/dir; echo done`
	alice.Must(http.MethodPost, "/api/job/register?namespace=pay", map[string]any{"jobName": "nightly", "appName": "rec", "shardingTotalCount": 1,
		"cpuCount": 0.1, "memoryMB": 16, "jobType": "SCRIPT", "props": map[string]string{"script.command.line": script},
		"secrets": []map[string]string{{"name": "db", "env": "DB_PW"}, {"name": "db", "file": "conf/db.pass"}}})
	// search cannot name pay's secret, nor read pay's list.
	bob.Must(http.MethodPost, "/api/app?namespace=search", map[string]any{"appName": "rec", "appURL": fileURL(recorderTGZ), "bootstrapScript": "bin/record.sh",
		"cpuCount": 0.1, "memoryMB": 32})
	code, body := bob.Do(http.MethodPost, "/api/job/register?namespace=search", map[string]any{"jobName": "steal", "appName": "rec", "jobType": "SCRIPT",
		"cpuCount": 0.1, "memoryMB": 16, "props": map[string]string{"script.command.line": "true"}, "secrets": []map[string]string{{"name": "db", "env": "X"}}})
	if code != http.StatusBadRequest || !strings.Contains(string(body), "holds no secret 'db'") {
		t.Errorf("search names pay's secret: %d %s", code, body)
	}
	if code, _ := bob.Do(http.MethodGet, "/api/namespaces/pay/secrets", nil); code != http.StatusForbidden {
		t.Errorf("bob lists pay's secrets: %d", code)
	}

	alice.Must(http.MethodPost, "/api/job/trigger?namespace=pay", "nightly")
	eventually(t, waitLong, func() bool {
		b, _ := os.ReadFile(filepath.Join(out, "dir"))
		return len(b) > 0
	}, "pay's nightly to run")
	for f, want := range map[string]string{"env": value, "file": value, "mode": "400\n"} {
		if b, _ := os.ReadFile(filepath.Join(out, f)); string(b) != want {
			t.Errorf("%s: %q, want %q", f, b, want)
		}
	}
	dirB, _ := os.ReadFile(filepath.Join(out, "dir"))
	secretsDir := strings.TrimSpace(string(dirB))
	eventually(t, waitLong, func() bool {
		_, err := os.Stat(secretsDir)
		return os.IsNotExist(err)
	}, "the task's secrets directory %s to be removed when it ends", secretsDir)
	// Nothing at rest or in a log holds the value.
	if err := filepath.WalkDir(s.dataDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(value)) || bytes.Contains(b, []byte(base64.StdEncoding.EncodeToString([]byte(value)))) {
			t.Errorf("%s holds the value", p)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s.Log(), value) {
		t.Error("the scheduler's log holds the value")
	}
	for _, path := range []string{"/api/namespaces/pay/secrets", "/api/namespaces/pay/secrets/db", "/api/job/jobs/nightly?namespace=pay",
		"/api/job/events/executions?namespace=pay&jobName=nightly", "/api/audit?namespace=pay"} {
		if _, body := alice.Do(http.MethodGet, path, nil); strings.Contains(string(body), value) {
			t.Errorf("GET %s holds the value", path)
		}
	}
}
