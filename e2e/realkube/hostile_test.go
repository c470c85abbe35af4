//go:build e2e

package realkube

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// A task pod, as a hostile team's, tries from inside what it would try on
// the embedded engine: root, capabilities, no_new_privs, the service
// account's token, the root file system, the host's files; and puts a
// link in place of its own stdout in its sandbox. Every row is denied,
// and its log, read through the API server, is its own output.
func TestHostileTaskPodGainsNothing(t *testing.T) {
	requireK8s(t)
	ns := namespace(t)
	s := startScheduler(t, "scheduler", schedOpts{ns: ns})
	s.publishApp("rec", true)
	probe := strings.Join([]string{
		`row() { if [ "$2" = 0 ]; then echo "ROW $1 ALLOWED $3"; else echo "ROW $1 DENIED $3"; fi; }`,
		`st() { grep "^$1:" /proc/self/status | awk '{print $2}'; }`,
		`[ "$(id -u)" != 0 ]; row runs-as-root $((1-$?)) "uid=$(id -u)"`,
		`[ "$(st NoNewPrivs)" = 1 ]; row no-new-privs-unset $((1-$?)) "$(st NoNewPrivs)"`,
		`[ "$(st CapEff)" = 0000000000000000 ]; row capability-effective $((1-$?)) "$(st CapEff)"`,
		`[ "$(st CapPrm)" = 0000000000000000 ]; row capability-permitted $((1-$?)) "$(st CapPrm)"`,
		`ls /var/run/secrets/kubernetes.io/serviceaccount/token >/dev/null 2>&1; row service-account-token $? ""`,
		`touch /hostile-probe 2>/dev/null; row write-root-fs $? ""`,
		`cat /etc/shadow >/dev/null 2>&1; row host-shadow $? ""`,
		`mkdir /tmp/m && mount -t tmpfs none /tmp/m 2>/dev/null; row mount $? ""`,
		`echo end-of-probe`,
		`ln -sf /etc/passwd "$MESOS_SANDBOX/stdout" 2>/dev/null; ln -sf /etc/passwd "$ELASTICJOB_SANDBOX/stdout" 2>/dev/null; true`,
	}, "; ")
	j := transient("hostile", "rec", 1, "")
	j["jobType"] = "SCRIPT"
	j["props"] = map[string]string{"script.command.line": probe}
	s.register(j)
	s.trigger("hostile")
	var out string
	eventually(t, waitLong, func() bool {
		rows := s.executions("hostile")
		if len(rows) == 0 || rows[0].CompleteTime == "" {
			return false
		}
		code, body := s.api().Do(http.MethodGet, "/api/job/logs/"+url.PathEscape(rows[0].TaskID)+"?full=true", nil)
		out = string(body)
		return code == http.StatusOK && strings.Contains(out, "end-of-probe")
	}, "the probe's log")
	rows := regexp.MustCompile(`(?m)^ROW (\S+) (ALLOWED|DENIED) ?(.*)$`).FindAllStringSubmatch(out, -1)
	if len(rows) < 8 {
		t.Fatalf("only %d rows in the probe's log:\n%s", len(rows), out)
	}
	for _, r := range rows {
		if r[2] == "ALLOWED" {
			t.Errorf("CROSSED: %s: %s", r[1], r[3])
		}
	}
	if strings.Contains(out, "root:x:0:0") {
		t.Errorf("the log read followed the pod's link to /etc/passwd")
	}
}
