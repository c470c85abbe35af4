package api_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/history/view"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/secrets"
	"github.com/ejcloud/elasticjob/store"
)

// secretValue is pay's secret value: no answer of the API may hold it,
// in any encoding, nor may the log.
const secretValue = "V4LUE-of-pay-db-9d1c"

func testKeyring(t *testing.T, lines ...string) *secrets.Keyring {
	t.Helper()
	if len(lines) == 0 {
		lines = []string{"k1:" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))}
	}
	kr, err := secrets.ParseKeyring([]byte(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

// syncBuffer is a log sink the handlers may write to from any goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// secretsAPI is the two teams' API with a keyring, pay's secret db stored
// by alice (then overwritten) and pay's job nightly naming it.
func secretsAPI(t *testing.T) (*tenancy, *syncBuffer) { return secretsAPIWith(t, nil) }

// secretsAPIWith is secretsAPI with more options.
func secretsAPIWith(t *testing.T, more func(*api.Options)) (*tenancy, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	tn := twoTeamsAPI(t, func(o *api.Options) {
		o.Tenancy.Secrets = testKeyring(t)
		o.Log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		if more != nil {
			more(o)
		}
	})
	for i, v := range []string{"first-" + secretValue, secretValue} {
		w := tn.call("PUT", "/api/namespaces/pay/secrets/db", `{"value":"`+v+`"}`, "alice", "secret")
		if want := []int{201, 200}[i]; w.Code != want {
			t.Fatalf("put %d: %d %s", i, w.Code, w.Body)
		}
	}
	w := tn.call("PUT", "/api/job/update?namespace=pay", `{"jobName":"nightly","secrets":[{"name":"db","env":"DB_PASSWORD"},{"name":"db","file":"conf/db.pass"}]}`, "alice", "secret")
	if w.Code != 200 {
		t.Fatalf("name the secret in the job: %d %s", w.Code, w.Body)
	}
	return tn, logs
}

// leaks reports whether s holds the secret value in any form the API
// could have used: as it is, in base64 (a JSON []byte), or its sealed
// bytes as stored.
func leaks(t *testing.T, tn *tenancy, s string) bool {
	sealed, _, err := tn.reg.Tenancy().Secret(context.Background(), "pay", "db")
	if err != nil {
		t.Fatal(err)
	}
	for _, needle := range []string{secretValue, base64.StdEncoding.EncodeToString([]byte(secretValue)),
		base64.StdEncoding.EncodeToString(sealed.Ciphertext), base64.StdEncoding.EncodeToString(sealed.Ciphertext)[:16]} {
		if strings.Contains(s, needle) {
			return true
		}
	}
	return false
}

// TestSecretNeverReadBack walks every route of the router as every kind
// of caller (the admin, pay's editor and viewer, pay's API token, another
// team's user), in pay and in default, reads first and then writes: no
// answer holds the value, in any encoding, nor its sealed bytes; nor do
// the audit log's rows or the scheduler's log. The one way out is the
// executor's route, for a running task of the job with its token.
func TestSecretNeverReadBack(t *testing.T) {
	tn, logs := secretsAPI(t)
	routes := tn.h.(*gin.Engine).Routes()
	callers := []struct{ user, pass string }{{"root", "s3cret"}, {"alice", "secret"}, {"carol", "pw3"}, {"Bearer " + tn.payToken, ""}, {"bob", "hunter2"}}
	calls := 0
	for _, writes := range []bool{false, true} {
		for _, rt := range routes {
			if isReadMethod(rt.Method) == writes || rt.Path == api.ExecutorSecretsPath {
				continue
			}
			for _, c := range callers {
				for _, ns := range []string{"pay", "default"} {
					target := tn.fill(rt.Path, ns) + "?" + tn.query(rt.Path, ns)
					w := tn.call(rt.Method, target, bodyFor(rt.Path), c.user, c.pass)
					calls++
					if leaks(t, tn, w.Body.String()) || leaks(t, tn, headers(w)) {
						t.Errorf("%s %s as %s: %d %s", rt.Method, target, c.user, w.Code, w.Body)
					}
				}
			}
		}
	}
	if calls < 500 {
		t.Fatalf("only %d calls: the walk is broken", calls)
	}
	w := tn.call("GET", "/api/audit?namespace=pay&per_page=500", "", "root", "s3cret")
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"secret"`) || leaks(t, tn, w.Body.String()) {
		t.Errorf("the audit log: %d %s", w.Code, w.Body)
	}
	if leaks(t, tn, logs.String()) {
		t.Errorf("the log holds the value:\n%s", logs)
	}
	// The registry holds it sealed only.
	n, err := tn.kv.Get(context.Background(), "/secrets/pay/db")
	if err != nil || strings.Contains(string(n.Value), secretValue) {
		t.Fatalf("stored: %s %v", n.Value, err)
	}
}

func headers(w *httptest.ResponseRecorder) string {
	var b strings.Builder
	for k, v := range w.Header() {
		b.WriteString(k + ": " + strings.Join(v, ",") + "\n")
	}
	return b.String()
}

// TestSecretsOfANamespace: what editors, viewers and others may do, and
// the metadata shown.
func TestSecretsOfANamespace(t *testing.T) {
	tn, _ := secretsAPI(t)
	w := tn.call("GET", "/api/namespaces/pay/secrets", "", "carol", "pw3") // view lists
	var list []secrets.Meta
	if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil || len(list) != 1 {
		t.Fatalf("carol lists: %d %s", w.Code, w.Body)
	}
	m := list[0]
	if m.Name != "db" || m.Namespace != "pay" || m.Version != 2 || m.Size != len(secretValue) || m.CreatedBy != "alice" || m.UpdatedBy != "alice" || m.KeyID != "k1" {
		t.Errorf("metadata %+v", m)
	}
	for _, c := range []struct {
		method, target, body, user, pass string
		code                             int
	}{
		{"PUT", "/api/namespaces/pay/secrets/x", `{"value":"v"}`, "carol", "pw3", 403},           // view cannot write
		{"GET", "/api/namespaces/pay/secrets", "", "bob", "hunter2", 403},                        // no role in pay
		{"PUT", "/api/namespaces/pay/secrets/x", `{"value":"v"}`, "bob", "hunter2", 403},         // nor write there
		{"GET", "/api/namespaces/search/secrets", "", "bob", "hunter2", 200},                     // his own: empty
		{"GET", "/api/namespaces/pay/secrets/db", "", "carol", "pw3", 200},                       // one's metadata
		{"GET", "/api/namespaces/pay/secrets/nope", "", "carol", "pw3", 404},                     // unknown
		{"PUT", "/api/namespaces/pay/secrets/a%2Fb", `{"value":"v"}`, "alice", "secret", 404},    // not a name (no route)
		{"PUT", "/api/namespaces/pay/secrets/-x", `{"value":"v"}`, "alice", "secret", 400},       // not a name
		{"PUT", "/api/namespaces/pay/secrets/x", `{}`, "alice", "secret", 400},                   // no value
		{"PUT", "/api/namespaces/pay/secrets/x", `{"value":""}`, "alice", "secret", 400},         // empty
		{"PUT", "/api/namespaces/pay/secrets/x", `{"valueBase64":"!!"}`, "alice", "secret", 400}, // not base64
		{"PUT", "/api/namespaces/pay/secrets/x", `{"value":"v","other":1}`, "alice", "secret", 400},
		{"PUT", "/api/namespaces/pay/secrets/bin", `{"valueBase64":"AAEC/w=="}`, "Bearer " + tn.payToken, "", 201}, // CI's token writes
		{"DELETE", "/api/namespaces/pay/secrets/db", "", "alice", "secret", 409},                                   // nightly names it
		{"DELETE", "/api/namespaces/pay/secrets/bin", "", "carol", "pw3", 403},                                     // view cannot delete
		{"DELETE", "/api/namespaces/pay/secrets/bin", "", "alice", "secret", 204},                                  // deleted
		{"DELETE", "/api/namespaces/pay/secrets/bin", "", "alice", "secret", 404},                                  // gone
		{"PUT", "/api/job/update?namespace=pay", `{"jobName":"nightly","secrets":[{"name":"missing","env":"X"}]}`, "alice", "secret", 400},
		{"PUT", "/api/job/update?namespace=pay", `{"jobName":"nightly","secrets":[{"name":"db","env":"PATH"}]}`, "alice", "secret", 400},
		{"PUT", "/api/job/update?namespace=pay", `{"jobName":"nightly","secrets":[{"name":"db","file":"../x"}]}`, "alice", "secret", 400},
		{"PUT", "/api/job/update?namespace=pay", `{"jobName":"nightly","secrets":[{"env":"X"}]}`, "alice", "secret", 400},               // no name
		{"PUT", "/api/job/update?namespace=search", `{"jobName":"nightly","secrets":[{"name":"db","env":"X"}]}`, "bob", "hunter2", 400}, // pay's secret is not search's
	} {
		w := tn.call(c.method, c.target, c.body, c.user, c.pass)
		if w.Code != c.code {
			t.Errorf("%s %s as %s: %d %s; want %d", c.method, c.target, c.user, w.Code, w.Body, c.code)
		}
	}
	w = tn.call("DELETE", "/api/namespaces/pay/secrets/db", "", "alice", "secret")
	if !strings.Contains(w.Body.String(), "nightly") {
		t.Errorf("the refusal names no job: %s", w.Body)
	}
}

// TestSecretsNeedAKey: without secrets_key_file, storing or naming a
// secret is refused with how to set one.
func TestSecretsNeedAKey(t *testing.T) {
	tn := twoTeamsAPI(t)
	w := tn.call("PUT", "/api/namespaces/pay/secrets/db", `{"value":"v"}`, "alice", "secret")
	if w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "secrets_key_file") {
		t.Errorf("put without a key: %d %s", w.Code, w.Body)
	}
	w = tn.call("PUT", "/api/job/update?namespace=pay", `{"jobName":"nightly","secrets":[{"name":"db","env":"X"}]}`, "alice", "secret")
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "secrets_key_file") {
		t.Errorf("a job naming a secret without a key: %d %s", w.Code, w.Body)
	}
	// A Kubernetes Secret needs the Kubernetes engine (this server has none): refused, not dropped.
	w = tn.call("PUT", "/api/job/update?namespace=pay", `{"jobName":"nightly","secrets":[{"kubernetesSecret":"db","key":"pw","env":"X"}]}`, "alice", "secret")
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "kubernetesSecret db is for the Kubernetes engine") {
		t.Errorf("a job naming a Kubernetes Secret on Mesos: %d %s", w.Code, w.Body)
	}
}

func fetchSecrets(tn *tenancy, taskID, token string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", api.ExecutorSecretsPath, strings.NewReader(`{"taskId":"`+taskID+`"}`))
	req.Header.Set(api.TaskTokenHeader, token)
	w := httptest.NewRecorder()
	tn.h.ServeHTTP(w, req)
	return w
}

// TestExecutorFetchesSecrets: the task running pay's nightly gets the
// values with its token; a wrong token, another task's token, or its own
// once the task is no longer running gets nothing.
func TestExecutorFetchesSecrets(t *testing.T) {
	tn, _ := secretsAPI(t)
	kr := testKeyring(t)
	w := fetchSecrets(tn, tn.payTask, kr.TaskToken(tn.payTask))
	var got struct{ Secrets []api.FetchedSecret }
	if err := json.Unmarshal(w.Body.Bytes(), &got); w.Code != 200 || err != nil || len(got.Secrets) != 1 ||
		got.Secrets[0].Name != "db" || string(got.Secrets[0].Value) != secretValue || w.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("the running task: %d %s", w.Code, w.Body)
	}
	// The token was used: a second fetch with it (a token read from the
	// task's payload, a checkpoint) is refused while the task still runs.
	if w := fetchSecrets(tn, tn.payTask, kr.TaskToken(tn.payTask)); w.Code != 403 || leaks(t, tn, w.Body.String()) ||
		!strings.Contains(w.Body.String(), "good for one fetch") {
		t.Errorf("a second fetch: %d %s; want 403", w.Code, w.Body)
	}
	other := strings.Replace(tn.payTask, "@-@0@-@", "@-@1@-@", 1) // shard 1 is not running
	for name, c := range map[string]struct {
		task, token string
		code        int
	}{
		"no token":             {tn.payTask, "", 401},
		"another key's token":  {tn.payTask, testKeyring(t, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))).TaskToken(tn.payTask), 401},
		"another task's token": {tn.payTask, kr.TaskToken(other), 401},
		"a task not running":   {other, kr.TaskToken(other), 403},
		"a session token":      {tn.payTask, "ej1.x.y", 401},
		"not a task id at all": {"nightly", kr.TaskToken("nightly"), 400},
	} {
		if w := fetchSecrets(tn, c.task, c.token); w.Code != c.code || leaks(t, tn, w.Body.String()) {
			t.Errorf("%s: %d %s; want %d", name, w.Code, w.Body, c.code)
		}
	}
	// The task ends: its token opens nothing any more.
	if err := tn.kv.Commit(context.Background(), store.Delete("/namespaces/pay/state/running/nightly", store.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if w := fetchSecrets(tn, tn.payTask, kr.TaskToken(tn.payTask)); w.Code != 403 || leaks(t, tn, w.Body.String()) {
		t.Errorf("after the task ended: %d %s", w.Code, w.Body)
	}
}

// TestResealAfterRotation: with a new key first, the admin reseals every
// secret under it; the old key can then go, and the values still open.
func TestResealAfterRotation(t *testing.T) {
	oldKey := "k1:" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	newKey := "k2:" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{8}, 32))
	tn, _ := secretsAPI(t)
	rotated := twoTeamsAPIOver(t, tn, testKeyring(t, newKey, oldKey))
	if w := rotated.call("POST", "/api/operate/secrets/reseal", "", "alice", "secret"); w.Code != 403 {
		t.Errorf("an editor reseals: %d", w.Code)
	}
	w := rotated.call("POST", "/api/operate/secrets/reseal", "", "root", "s3cret")
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"resealed":1`) || !strings.Contains(w.Body.String(), `"key":"k2"`) {
		t.Fatalf("reseal: %d %s", w.Code, w.Body)
	}
	sealed, _, _ := tn.reg.Tenancy().Secret(context.Background(), "pay", "db")
	v, err := testKeyring(t, newKey).Open(sealed)
	if err != nil || string(v) != secretValue || sealed.Version != 2 {
		t.Fatalf("after the reseal, under the new key alone: %q %v (version %d)", v, err, sealed.Version)
	}
}

// twoTeamsAPIOver is another API over tn's registry with another keyring.
func twoTeamsAPIOver(t *testing.T, tn *tenancy, kr *secrets.Keyring) *tenancy {
	t.Helper()
	ops := &payOps{}
	o := api.Options{
		Registry: tn.reg,
		Log:      slog.New(slog.DiscardHandler),
		Live:     api.Live{Ops: ops, Engine: ops},
		Tenancy:  api.TenancyOptions{Secrets: kr},
		Auth:     api.NewAuth(api.Credentials{AdminUser: "root", AdminPassword: "s3cret", Users: tn.users}, clock.NewFake(t0), tn.reg.Tenancy()),
	}
	return &tenancy{h: api.New(o), reg: tn.reg, kv: tn.kv}
}

// recordedAudit keeps the rows written to it.
type recordedAudit struct {
	mu   sync.Mutex
	rows []view.Audit
}

func (r *recordedAudit) Record(_ context.Context, a view.Audit) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rows = append(r.rows, a)
	return nil
}

func (r *recordedAudit) Audits(context.Context, view.Query) (view.Page[view.Audit], error) {
	return view.Page[view.Audit]{}, nil
}

// TestSecretFetchBoundToItsExecutor: where the engine can tell which
// executor runs a task, the task's own valid token opens nothing unless
// the fetch proves it comes from that executor; such a refusal consumes
// nothing (the task's executor still fetches afterwards), is logged, and
// is written to the audit log in pay's namespace.
func TestSecretFetchBoundToItsExecutor(t *testing.T) {
	audit := &recordedAudit{}
	var asked []string
	tn, logs := secretsAPIWith(t, func(o *api.Options) {
		o.Audit = audit
		o.Tenancy.ExecutorBinding = func(taskID, proof string) error {
			asked = append(asked, taskID)
			if proof != "pay-executor-proof" {
				return errors.New("not the task's executor")
			}
			return nil
		}
	})
	kr := testKeyring(t)
	fetch := func(proof string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", api.ExecutorSecretsPath, strings.NewReader(`{"taskId":"`+tn.payTask+`"}`))
		req.Header.Set(api.TaskTokenHeader, kr.TaskToken(tn.payTask))
		if proof != "" {
			req.Header.Set(jobs.ExecutorProofHeader, proof)
		}
		w := httptest.NewRecorder()
		tn.h.ServeHTTP(w, req)
		return w
	}
	for _, proof := range []string{"", "search-executor-proof"} {
		if w := fetch(proof); w.Code != http.StatusForbidden || leaks(t, tn, w.Body.String()) ||
			!strings.Contains(w.Body.String(), "only to the executor that runs it") {
			t.Errorf("pay's token with proof %q: %d %s; want 403", proof, w.Code, w.Body)
		}
	}
	if !strings.Contains(logs.String(), "not from the executor that runs the task") {
		t.Errorf("the refusals were not logged:\n%s", logs)
	}
	audit.mu.Lock()
	var rows []view.Audit
	for _, r := range audit.rows {
		if r.Route == api.ExecutorSecretsPath {
			rows = append(rows, r)
		}
	}
	audit.mu.Unlock()
	if len(rows) != 2 {
		t.Fatalf("audit rows %+v, want 2", rows)
	}
	for _, r := range rows {
		if r.Namespace != "pay" || r.Target != tn.payTask || r.Status != http.StatusForbidden || r.Route != api.ExecutorSecretsPath ||
			!strings.Contains(r.Summary, "refused") {
			t.Errorf("audit row %+v", r)
		}
	}
	// Nothing was consumed: pay's own executor fetches now.
	if w := fetch("pay-executor-proof"); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), base64.StdEncoding.EncodeToString([]byte(secretValue))) {
		t.Fatalf("pay's executor after the refusals: %d %s", w.Code, w.Body)
	}
	if len(asked) != 3 {
		t.Errorf("the binding was asked %d times, want 3", len(asked))
	}
}
