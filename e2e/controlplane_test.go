//go:build e2e

package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A job's task cannot reach the embedded master as the scheduler nor the
// agent as another executor: with what its environment holds (the
// framework id, the agent's address, its own executor id) its SUBSCRIBE,
// operator call and /state read are refused 401, a status update for
// another executor's running task is refused, and it holds no executor
// token. The scheduler's own subscription is untouched: the other task
// keeps running and a job triggered afterwards runs.
func TestTasksCannotReachTheControlPlane(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, schedOpts{})
	out := outDir(t)
	at := func(name string) string { return filepath.Join(out, name) }
	s.publishApp("victim_app", fileURL(recorderTGZ), "bin/record.sh", true)
	s.publishApp("intruder_app", fileURL(recorderTGZ), "bin/record.sh", true)

	victim := `printf %s "$ELASTICJOB_TASK_ID" > ` + at("victim.task") + `.tmp && mv ` + at("victim.task") + `.tmp ` + at("victim.task") +
		`; printf %s "$MESOS_EXECUTOR_ID" > ` + at("victim.exec") + `.tmp && mv ` + at("victim.exec") + `.tmp ` + at("victim.exec") +
		`; sleep 300; :` // the sharding context is appended as arguments: to ":"
	s.must(http.MethodPost, "/api/job/register", jobConfig{JobName: "victim", AppName: "victim_app", JobExecutionType: "TRANSIENT",
		ShardingTotalCount: 1, CPUCount: 0.1, MemoryMB: 16, Props: map[string]string{"script.command.line": victim}})
	s.triggerTaken("victim", func() bool { return fileHolds(at("victim.exec")) })

	// Each probe records the HTTP status curl got (000: no answer).
	probe := `code() { curl -s -o /dev/null -m 5 -w '%{http_code}' "$@"; }; EP="http://$MESOS_AGENT_ENDPOINT"; FW="$MESOS_FRAMEWORK_ID"; ` +
		`VE=$(cat ` + at("victim.exec") + `); VT=$(cat ` + at("victim.task") + `); ` +
		`code -X POST -H 'Content-Type: application/json' -H 'Accept: application/json' ` +
		`-d "{\"type\":\"SUBSCRIBE\",\"framework_id\":{\"value\":\"$FW\"},\"subscribe\":{\"framework_info\":{\"id\":{\"value\":\"$FW\"},\"user\":\"root\",\"name\":\"intruder\"}}}" ` +
		`"$EP/api/v1/scheduler" > ` + at("subscribe") + `; ` +
		`code -X POST -H 'Content-Type: application/json' -d '{"type":"GET_EXECUTORS"}' "$EP/api/v1" > ` + at("operator") + `; ` +
		`code "$EP/state" > ` + at("state") + `; ` +
		`upd() { printf '{"type":"UPDATE","framework_id":{"value":"%s"},"executor_id":{"value":"%s"},"update":{"status":{"task_id":{"value":"%s"},"state":"TASK_FINISHED","source":"SOURCE_EXECUTOR","uuid":"AAAAAAAAAAAAAAAAAAAAAA=="}}}' "$FW" "$1" "$VT"; }; ` +
		`code -X POST -H 'Content-Type: application/json' -d "$(upd "$VE")" "$EP/api/v1/executor" > ` + at("update_as_other") + `; ` +
		`code -X POST -H 'Content-Type: application/json' -H "Authorization: Bearer $VE" -d "$(upd "$VE")" "$EP/api/v1/executor" > ` + at("update_made_up_token") + `; ` +
		`code -X POST -H 'Content-Type: application/json' -d "$(upd "$MESOS_EXECUTOR_ID")" "$EP/api/v1/executor" > ` + at("update_as_self") + `; ` +
		`printf %s "${MESOS_EXECUTOR_AUTHENTICATION_TOKEN:-none}" > ` + at("token") + `; ` +
		`echo done > ` + at("done") + `; :`
	s.must(http.MethodPost, "/api/job/register", jobConfig{JobName: "intruder", AppName: "intruder_app", JobExecutionType: "TRANSIENT",
		ShardingTotalCount: 1, CPUCount: 0.1, MemoryMB: 16, Props: map[string]string{"script.command.line": probe}})
	s.triggerTaken("intruder", func() bool { return fileHolds(at("done")) })

	for name, want := range map[string]string{
		"subscribe": "401", "operator": "401", "state": "401",
		"update_as_other": "401", "update_made_up_token": "401", "update_as_self": "401", "token": "none",
	} {
		if b, _ := os.ReadFile(at(name)); string(b) != want {
			t.Errorf("%s: %q, want %q", name, b, want)
		}
	}
	if strings.Contains(s.Log(), "replaced this stream") {
		t.Error("a task's SUBSCRIBE replaced the scheduler's stream")
	}
	if !strings.Contains(s.Log(), "refused an unauthenticated request") {
		t.Error("the embedded master did not log the refused requests")
	}
	if r := s.running("victim"); len(r) != 1 {
		t.Fatalf("victim after the probes: %+v, want its one task still running", r)
	}
	// The scheduler still launches.
	after := outDir(t)
	s.registerJob(recorderJob("after", "intruder_app", after, 1))
	s.runAndWait("after", after, 1)
	s.must(http.MethodPost, "/api/job/victim/disable", nil)
}

// fileHolds reports whether the file exists and is not empty.
func fileHolds(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Size() > 0
}
