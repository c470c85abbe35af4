package executor

import (
	"context"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ejcloud/elasticjob/jobs"
)

// secretsServer answers the executor's fetch as the scheduler does: the
// values for the right token, 401 otherwise; fails counts 503s first.
func secretsServer(t *testing.T, fails int32) (*httptest.Server, *atomic.Int32) {
	calls := &atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		switch {
		case r.URL.Path != secretsPath || r.Header.Get(taskTokenHeader) != "tok":
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"message":"the task token does not match"}`))
		case n <= fails:
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.Write([]byte(`{"secrets":[{"name":"db","value":"aHVudGVyMg=="}]}`)) // hunter2
		}
	}))
	t.Cleanup(srv.Close)
	return srv, calls
}

func secretTask(url, token string) jobs.TaskData {
	return jobs.TaskData{Job: jobs.Config{JobName: "nightly", Secrets: []jobs.SecretRef{{Name: "db", Env: "DB_PW"}, {Name: "db", File: "conf/db.pass"}}},
		SecretAccess: &jobs.SecretAccess{URLs: []string{url}, Token: token}}
}

func TestDeliverSecrets(t *testing.T) {
	srv, calls := secretsServer(t, 1)
	dir := t.TempDir()
	p := &Pipeline{Secrets: SecretsClient{Tries: 3}}
	env, err := p.deliverSecrets(context.Background(), secretTask(srv.URL, "tok"), "t1", dir)
	if err != nil {
		t.Fatal(err)
	}
	sdir := secretsDirOf(dir)
	if !slices.Contains(env, "DB_PW=hunter2") || !slices.Contains(env, jobs.SecretsDirEnv+"="+sdir) || calls.Load() != 2 {
		t.Fatalf("env %q after %d calls (one 503 retried)", env, calls.Load())
	}
	f := filepath.Join(sdir, "conf", "db.pass")
	b, err := os.ReadFile(f)
	st, _ := os.Stat(f)
	if err != nil || string(b) != "hunter2" || st.Mode().Perm() != 0o400 {
		t.Fatalf("file %q %v mode %v", b, err, st.Mode())
	}
	// A refusal is not retried and says why; no access at all says how.
	calls.Store(0)
	if _, err := p.deliverSecrets(context.Background(), secretTask(srv.URL, "bad"), "t1", t.TempDir()); err == nil ||
		!strings.Contains(err.Error(), "token does not match") || calls.Load() != 1 {
		t.Fatalf("a refused token: %v after %d calls", err, calls.Load())
	}
	td := secretTask(srv.URL, "tok")
	td.SecretAccess = nil
	if _, err := p.deliverSecrets(context.Background(), td, "t1", t.TempDir()); err == nil || !strings.Contains(err.Error(), "secrets_key_file") {
		t.Fatalf("no access: %v", err)
	}
	// A secret the scheduler did not give fails the task.
	td = secretTask(srv.URL, "tok")
	td.Job.Secrets = append(td.Job.Secrets, jobs.SecretRef{Name: "other", Env: "X"})
	if _, err := p.deliverSecrets(context.Background(), td, "t1", t.TempDir()); err == nil || !strings.Contains(err.Error(), `"other"`) {
		t.Fatalf("a missing secret: %v", err)
	}
}

// A job whose secrets are all Kubernetes Secrets fetches nothing from the scheduler: an env
// entry is already in the pod's environment; a file entry is copied from the pod's mount, and
// a pod without it (not the Kubernetes engine) fails saying which.
func TestDeliverKubernetesSecrets(t *testing.T) {
	p := &Pipeline{Secrets: SecretsClient{Tries: 1}}
	td := jobs.TaskData{Job: jobs.Config{JobName: "nightly", Secrets: []jobs.SecretRef{{KubernetesSecret: "pay-db", Key: "password", Env: "DB_PW"}}}}
	env, err := p.deliverSecrets(context.Background(), td, "t1", t.TempDir())
	if err != nil || len(env) != 0 {
		t.Fatalf("env %q, %v", env, err)
	}
	td.Job.Secrets = append(td.Job.Secrets, jobs.SecretRef{KubernetesSecret: "no-such-secret-here", Key: "k", File: "k"})
	if _, err := p.deliverSecrets(context.Background(), td, "t1", t.TempDir()); err == nil || !strings.Contains(err.Error(), "no-such-secret-here") {
		t.Fatalf("a file entry without its mount: %v", err)
	}
}

// TestFetchProvesItsExecutor: with the agent's executor token, a fetch
// carries the proof made of it for its own task, and never the token.
func TestFetchProvesItsExecutor(t *testing.T) {
	var got []http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Clone())
		w.Write([]byte(`{"secrets":[{"name":"db","value":"aHVudGVyMg=="}]}`))
	}))
	t.Cleanup(srv.Close)
	const execTok = "executor-token-7f3a"
	p := &Pipeline{Secrets: SecretsClient{Tries: 1, ExecutorToken: execTok}}
	if _, err := p.deliverSecrets(context.Background(), secretTask(srv.URL, "tok"), "t1", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	want := jobs.SecretFetchProof(sha256.Sum256([]byte(execTok)), "t1")
	if len(got) != 1 || got[0].Get(jobs.ExecutorProofHeader) != want {
		t.Fatalf("headers %v, want proof %s", got, want)
	}
	for k, vs := range got[0] {
		for _, v := range vs {
			if strings.Contains(v, execTok) {
				t.Errorf("header %s carries the executor token", k)
			}
		}
	}
	// In a pod (no executor token) no proof is sent.
	got = nil
	p.Secrets.ExecutorToken = ""
	if _, err := p.deliverSecrets(context.Background(), secretTask(srv.URL, "tok"), "t1", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Get(jobs.ExecutorProofHeader) != "" {
		t.Fatalf("a pod's fetch: %v", got)
	}
}
