//go:build e2e

package hostile

import (
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// search's tasks plant links, FIFOs and hard links in their own sandbox,
// in place of their own logs and of logs of task ids they make up, aiming
// at pay's sandbox (its task's output, its executor's log, its file
// secret), the agent's checkpoint of pay's task (which holds the secret
// fetch token), the scheduler's files and the host's; then search asks
// the API for those logs. Nothing of pay's or the scheduler's comes back,
// no read hangs, and the agent still serves search's own honest log.
func TestPlantedLinksReadNothingOfAnotherTeam(t *testing.T) {
	w := newWorld(t, 1)
	payTaskDir := filepath.Join(w.paySandbox, "tasks", w.payTaskID)
	targets := map[string]string{
		"pay-task-stdout":  filepath.Join(payTaskDir, "stdout"),
		"pay-executor-log": filepath.Join(w.paySandbox, "stdout"),
		"pay-file-secret":  filepath.Join(payTaskDir, "secrets", "tls", "server.key"),
		"pay-checkpoint":   w.payRecords,
		"metrics-token":    w.metrics,
		"secrets-key":      w.keyFile,
		"registry":         filepath.Join(w.data, "registry.db"),
		"shadow":           "/etc/shadow",
		"zero":             "/dev/zero",
		"pay-task-dir":     payTaskDir,
		"pay-sandbox":      w.paySandbox,
	}
	// Each shard plants one way into its own task's log, then stays, so
	// that its task id is one the scheduler launched and still runs.
	// Shard 0 also makes up task ids of its own job beside its own.
	script := "#!/bin/sh\n" + `
set -u
T="$MESOS_SANDBOX/tasks"
OWN="$T/$ELASTICJOB_TASK_ID"
fake() { echo "${ELASTICJOB_TASK_ID%@-@*}@-@0000000$1-0000-4000-8000-000000000000"; }
plant() { mkdir -p "$T/$(fake $1)"; ln -sfn "$2" "$T/$(fake $1)/$3" && echo "ROW fake$1 $3"; }
echo "honest line of shard $ELASTICJOB_SHARDING_ITEM"
case "$ELASTICJOB_SHARDING_ITEM" in
0)
  plant 1 '` + targets["pay-task-stdout"] + `' stdout
  plant 2 '` + targets["pay-executor-log"] + `' stdout
  plant 3 '` + targets["pay-file-secret"] + `' stdout
  plant 4 '` + targets["pay-checkpoint"] + `' stdout
  plant 5 '` + targets["metrics-token"] + `' stderr
  plant 6 '` + targets["registry"] + `' stdout
  ln -sfn '` + targets["pay-task-dir"] + `' "$T/$(fake 7)" && echo "ROW fake7 dir"
  mkdir -p "$T/$(fake 8)"; mkfifo "$T/$(fake 8)/stdout" && echo "ROW fake8 fifo"
  mkdir -p "$T/$(fake 9)"; ln /etc/passwd "$T/$(fake 9)/stdout" 2>&1 | sed 's/^/ROW fake9 hardlink: /'
  ;;
1) mv "$OWN/stdout" "$OWN/stdout.real"; ln -sfn '` + targets["pay-task-stdout"] + `' "$OWN/stdout";
   ln -sfn '` + targets["pay-executor-log"] + `' "$OWN/stderr" ;;
2) mv "$OWN" "$OWN.real"; ln -sfn '` + targets["pay-task-dir"] + `' "$OWN" ;;
3) mv "$OWN/stdout" "$OWN/stdout.real"; ln -sfn '` + targets["pay-checkpoint"] + `' "$OWN/stdout";
   ln -sfn '` + targets["pay-file-secret"] + `' "$OWN/stderr" ;;
4) mv "$OWN/stdout" "$OWN/stdout.real"; mkfifo "$OWN/stdout"; ln -sfn /dev/zero "$OWN/stderr" ;;
5) mv "$OWN/stdout" "$OWN/stdout.real"; ln -sfn '` + targets["secrets-key"] + `' "$OWN/stdout";
   ln -sfn '` + targets["registry"] + `' "$OWN/stderr" ;;
esac
echo planted > "$MESOS_SANDBOX/planted.$ELASTICJOB_SHARDING_ITEM"
exec sleep 600
`
	w.attack("links", "bin/links.sh", 6, map[string]string{"bin/links.sh": script})
	for i := range 6 {
		harness.Eventually(t, waitLong, pollEvery, func() bool {
			return w.sandboxFile("links", fmt.Sprintf("planted.%d", i), "planted") != ""
		}, "search's shard %d to plant its links", i)
	}
	var ids []string
	var running []struct {
		TaskID string `json:"taskId"`
	}
	harness.Eventually(t, waitLong, pollEvery, func() bool {
		code, body := w.search.Do(http.MethodGet, "/api/job/tasks/running?namespace=search", nil)
		running = nil
		return code == http.StatusOK && jsonInto(body, &running) && len(running) == 6
	}, "search's 6 shards to show as running")
	for _, r := range running {
		ids = append(ids, r.TaskID)
	}
	prefix := ids[0][:strings.LastIndex(ids[0], "@-@")]
	for i := 1; i <= 9; i++ {
		ids = append(ids, fmt.Sprintf("%s@-@0000000%d-0000-4000-8000-000000000000", prefix, i))
	}
	for _, id := range ids {
		for _, stream := range []string{"stdout", "stderr"} {
			path := "/api/job/logs/" + url.PathEscape(id) + "?namespace=search&full=true&stream=" + stream
			code, body := w.search.Do(http.MethodGet, path, nil)
			if found := w.secretsIn(string(body)); len(found) > 0 {
				t.Errorf("CROSSED: GET %s (%d) returned %v", path, code, found)
			}
			if code == http.StatusOK && len(body) >= 1<<20 {
				t.Errorf("GET %s returned %d bytes: a device or an endless file was read", path, len(body))
			}
		}
	}
	// Ids that are not ids: .., slashes, NUL, another namespace's.
	for _, id := range []string{"..", "../../../../etc/shadow", prefix + "@-@..%2F..%2F..", prefix + "/../../meta",
		w.payTaskID, "search~links@-@0@-@READY@-@@-@x%00", "search~..~pay"} {
		path := "/api/job/logs/" + id + "?namespace=search&full=true"
		code, body := w.search.Do(http.MethodGet, path, nil)
		// An error may name the id it was given; nothing else of pay's.
		echo := strings.ReplaceAll(string(body), id, "")
		if code == http.StatusOK || len(w.secretsIn(echo)) > 0 {
			t.Errorf("CROSSED: GET %s answered %d %.200s", path, code, body)
		}
	}
	// The agent still answers after the FIFOs and /dev/zero: pay's
	// honest log reads as pay's.
	code, body := w.admin.Do(http.MethodGet, "/api/job/logs/"+url.PathEscape(w.payTaskID)+"?namespace=pay&full=true", nil)
	if code != http.StatusOK || !strings.Contains(string(body), w.output) {
		t.Errorf("pay's own log after the attacks: %d %.300s", code, body)
	}
	if !alive(w.payPid) {
		t.Errorf("pay's task %d did not survive", w.payPid)
	}
}
