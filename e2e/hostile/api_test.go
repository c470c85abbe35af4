//go:build e2e

package hostile

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/e2e/harness"
	"github.com/ejcloud/elasticjob/jobs"
)

// search, with its edit token, calls every route of the API (each method
// of api/openapi.yaml) with pay's names: in pay's namespace, in its own,
// and with the namespace smuggled in other ways. No call succeeds in pay,
// and no answer holds anything of pay's. Then it replays and forges the
// executor's secret fetch for pay's task.
func TestEveryRouteWithAnotherTeamsNames(t *testing.T) {
	w := newWorld(t, 0)
	routes := openAPIRoutes(t)
	if len(routes) < 60 {
		t.Fatalf("only %d routes read from api/openapi.yaml", len(routes))
	}
	params := map[string]string{"appName": "payapp", "jobName": "holder", "taskId": w.payTaskID, "workflowName": "holder",
		"name": "pay", "namespace": "pay", "key": "holder", "id": "1", "action": "cancel", "period": "day",
		"member": "1", "secret": "db-password", "calendar": "holidays", "template": "t", "token": "1", "tokenId": "1"}
	fill := regexp.MustCompile(`\{([^}]+)\}`)
	bodies := []any{nil, "holder", map[string]any{"jobName": "holder", "appName": "payapp", "namespace": "pay", "value": "x"}}
	crossed := 0
	for _, r := range routes {
		path := fill.ReplaceAllStringFunc(r.path, func(m string) string {
			if v, ok := params[m[1:len(m)-1]]; ok {
				return v
			}
			return "pay"
		})
		for _, q := range []string{"?namespace=pay", "?namespace=search", "?namespace=search&namespace=pay",
			"?namespace=%70ay", "?namespace=PAY", "?namespace=search%00pay"} {
			for _, body := range bodies {
				if r.method == http.MethodGet && body != nil {
					continue
				}
				code, out := w.search.Do(r.method, path+q, body)
				// An error may name the ids it was given; nothing else of pay's.
				out = []byte(strings.ReplaceAll(string(out), w.payTaskID, "TASK"))
				// Queries that name pay alone; the others must at least
				// give nothing of pay's away.
				inPay := q == "?namespace=pay" || q == "?namespace=%70ay" || q == "?namespace=PAY"
				if found := w.secretsIn(string(out)); len(found) > 0 {
					t.Errorf("CROSSED: %s %s%s answered %d with %v: %.200s", r.method, path, q, code, found, out)
					crossed++
				} else if inPay && code/100 == 2 && !r.public() &&
					(r.method != http.MethodGet || strings.Contains(string(out), "holder") || strings.Contains(string(out), "payapp")) {
					t.Errorf("CROSSED: %s %s%s answered %d in pay: %.200s", r.method, path, q, code, out)
					crossed++
				}
			}
		}
	}
	// The metrics: search's token reads search's series alone.
	code, out := w.search.Do(http.MethodGet, "/metrics", nil)
	if strings.Contains(string(out), `namespace="pay"`) {
		t.Errorf("CROSSED: /metrics (%d) as search holds pay's series", code)
	}
	// pay's job, secrets and task survived every call.
	if !alive(w.payPid) {
		t.Errorf("pay's task %d did not survive", w.payPid)
	}
	var secrets []map[string]any
	if err := json.Unmarshal(w.admin.Must(http.MethodGet, "/api/namespaces/pay/secrets", nil), &secrets); err != nil || len(secrets) != 2 {
		t.Errorf("pay's secrets after the walk: %v %v", err, secrets)
	}
	t.Logf("%d routes × 6 namespaces × bodies called as search; %d crossed", len(routes), crossed)

	// The executor's secret fetch: a made-up token, and pay's own token
	// (as a leak would give it) replayed: bare, as a task would, and with
	// the proof of another team's executor (search's, whose agent token
	// root reads here from its environment: more than any task can).
	fetch := func(token, proof string) (int, []byte) {
		req, _ := harness.NewRequest(http.MethodPost, w.base+"/executor/v1/secrets", map[string]string{"taskId": w.payTaskID})
		req.Header.Set("X-Elasticjob-Task-Token", token)
		if proof != "" {
			req.Header.Set(jobs.ExecutorProofHeader, proof)
		}
		code, body, _, err := harness.Send(http.DefaultClient, req)
		if err != nil {
			t.Fatal(err)
		}
		return code, body
	}
	crossedFetch := func(code int, body []byte) bool {
		return code == http.StatusOK || bytes.Contains(body, []byte(w.envSecret)) ||
			bytes.Contains(body, []byte(base64.StdEncoding.EncodeToString([]byte(w.envSecret))))
	}
	if code, body := fetch("forged-"+w.payTaskID, ""); code == http.StatusOK ||
		len(w.secretsIn(strings.ReplaceAll(string(body), w.payTaskID, "TASK"))) > 0 {
		t.Errorf("CROSSED: a forged fetch token answered %d %.200s", code, body)
	}
	tok := fetchToken(t, w.payRecords)
	if tok == "" {
		t.Fatalf("no fetch token found in pay's checkpoint %s", w.payRecords)
	}
	if code, body := fetch(tok, ""); crossedFetch(code, body) || !bytes.Contains(body, []byte("executor that runs it")) {
		t.Errorf("CROSSED: pay's fetch token, replayed bare while pay's task runs, answered %d %.200s (want a refusal naming the executor binding)", code, body)
	}
	w.attack("thief", "bin/hold.sh", 1, map[string]string{"bin/hold.sh": "#!/bin/sh\necho THIEF-UP\nexec sleep 600\n"})
	var searchExecTok string
	harness.Eventually(t, waitLong, pollEvery, func() bool {
		searchExecTok = executorTokenOf("search~thief")
		return searchExecTok != ""
	}, "search's executor to run")
	stolen := jobs.SecretFetchProof(sha256.Sum256([]byte(searchExecTok)), w.payTaskID)
	if code, body := fetch(tok, stolen); crossedFetch(code, body) || !bytes.Contains(body, []byte("executor that runs it")) {
		t.Errorf("CROSSED: pay's fetch token with search's executor's proof answered %d %.200s (want a refusal naming the executor binding)", code, body)
	}
	if !strings.Contains(w.sched.Log(), "not from the executor that runs the task") {
		t.Errorf("the refused fetches were not logged")
	}
	// pay's admin finds them in pay's audit log.
	var audits struct {
		Rows []struct{ Route, Target, Summary string }
	}
	harness.Eventually(t, waitLong, pollEvery, func() bool {
		_ = json.Unmarshal(w.admin.Must(http.MethodGet, "/api/audit?namespace=pay&per_page=1000", nil), &audits)
		n := 0
		for _, r := range audits.Rows {
			if r.Route == "/executor/v1/secrets" && r.Target == w.payTaskID && strings.Contains(r.Summary, "not from the executor") {
				n++
			}
		}
		return n >= 2
	}, "the refused fetches in pay's audit log")
}

// executorTokenOf is the agent's token of a live executor of the app
// (namespace~app), read as root from the environment it started with.
func executorTokenOf(app string) string {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		pid, _ := strconv.Atoi(d.Name())
		if strings.HasPrefix(harness.EnvOf(pid, "MESOS_EXECUTOR_ID"), app+"@-@") {
			if tok := harness.EnvOf(pid, "MESOS_EXECUTOR_AUTHENTICATION_TOKEN"); tok != "" {
				return tok
			}
		}
	}
	return ""
}

// route is one method of one path of the API's description.
type route struct{ method, path string }

// public routes answer anyone (login, the description, who am I).
func (r route) public() bool {
	for _, p := range []string{"/api/login", "/api/logout", "/api/openapi.json", "/api/whoami", "/api/oidc", "/api/cron/next"} {
		if strings.HasPrefix(r.path, p) {
			return true
		}
	}
	return false
}

// openAPIRoutes reads every path and method of api/openapi.yaml.
func openAPIRoutes(t *testing.T) []route {
	f, err := os.Open("../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []route
	var path string
	sc := bufio.NewScanner(f)
	pathLine := regexp.MustCompile(`^  (/\S*):\s*$`)
	methodLine := regexp.MustCompile(`^    (get|put|post|delete|patch):\s*$`)
	for sc.Scan() {
		if m := pathLine.FindStringSubmatch(sc.Text()); m != nil {
			path = m[1]
		} else if m := methodLine.FindStringSubmatch(sc.Text()); m != nil && path != "" {
			out = append(out, route{strings.ToUpper(m[1]), path})
		}
	}
	return out
}

// fetchToken is the secret fetch token in an agent's task records (the
// TaskInfo it checkpointed), as root reads it.
func fetchToken(t *testing.T, records string) string {
	b, err := os.ReadFile(records)
	if err != nil {
		t.Logf("read %s: %v", records, err)
		return ""
	}
	var rec struct{ Task []byte }
	if err := json.Unmarshal(bytes.SplitN(b, []byte("\n"), 2)[0], &rec); err != nil {
		return ""
	}
	m := regexp.MustCompile(`"secretAccess":\{[^}]*"token":"([^"]+)"`).FindSubmatch(rec.Task)
	if m == nil {
		m = regexp.MustCompile(`"token":"([^"]+)"`).FindSubmatch(rec.Task)
	}
	if m == nil {
		return ""
	}
	return string(m[1])
}
