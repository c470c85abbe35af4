//go:build e2e

package hostile

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// hostProbe is what search's task tries from inside, one ROW line each:
// "ROW name ALLOWED|DENIED detail". Every row must say DENIED. $1 is pay's
// task's host pid, $2 the metrics token file, $3 the secrets key file,
// $4 the data directory, $5 pay's sandbox, $6 pay's task id.
const hostProbe = `#!/bin/sh
PAYPID=$1 METRICS=$2 KEY=$3 DATA=$4 PAYBOX=$5
row() { if [ "$2" = 0 ]; then echo "ROW $1 ALLOWED $3"; else echo "ROW $1 DENIED $3"; fi; }
# What a denied try printed is left out: it echoes the paths it was given.
try() { name=$1; shift; out=$("$@" 2>&1); rc=$?; [ $rc = 0 ] || out=; row "$name" $rc "$(echo "$out" | head -c 200 | tr '\n' ' ')"; }
st() { grep "^$1:" /proc/self/status | awk '{print $2}'; }

# Privileges: no_new_privs set, no capability at all, not root.
[ "$(st NoNewPrivs)" = 1 ]; row no-new-privs-unset $((1-$?)) "NoNewPrivs=$(st NoNewPrivs)"
for c in CapInh CapPrm CapEff CapBnd CapAmb; do
  [ "$(st $c)" = 0000000000000000 ]; row "capability-$c" $((1-$?)) "$c=$(st $c)"
done
[ "$(id -u)" != 0 ]; row runs-as-root $((1-$?)) "uid=$(id -u)"
# setuid programs: with no_new_privs they run as the caller.
mkdir -p "$MESOS_SANDBOX/mnt"
try setuid-mount mount -t tmpfs none "$MESOS_SANDBOX/mnt"
try setuid-su su -c true root
try mknod-device mknod "$MESOS_SANDBOX/null" c 1 3
# Namespaces: no user namespace; an IPC namespace of its own.
try user-namespace unshare -U -r true
try user-namespace-map unshare -U true
n=$(tail -n +2 /proc/sysvipc/shm 2>/dev/null | wc -l)
[ "$n" -gt 0 ]; row ipc-sees-other-segments $? "$n segments: $(tail -n +2 /proc/sysvipc/shm 2>/dev/null | head -3 | tr '\n' ' ')"
# Other processes: pay's is not visible; pid 1 (the init, root's) is
# neither traceable nor signalable, nor its root or cwd readable.
[ -e /proc/$PAYPID ] && [ "$(cat /proc/$PAYPID/comm 2>/dev/null)" = sleep ]; row sees-pay-pid $? "pid $PAYPID"
try signal-pay-pid kill -0 "$PAYPID"
try signal-init kill -0 1
try init-root ls /proc/1/root/
try init-cwd ls /proc/1/cwd/
try init-environ cat /proc/1/environ
try ptrace-init perl -e 'syscall(101, 16, 1, 0, 0) == 0 or exit 1'
try ptrace-pay perl -e "syscall(101, 16, $PAYPID, 0, 0) == 0 or exit 1"
# The scheduler's files and pay's.
try metrics-token cat "$METRICS"
try secrets-key cat "$KEY"
ls -A "$DATA" 2>/dev/null | grep -q '\.db'; row data-dir-databases $? "$(ls -A "$DATA" 2>/dev/null | tr '\n' ' ')"
try registry head -c 16 "$DATA/registry.db"
try pay-sandbox ls "$PAYBOX"
try pay-cache ls "$DATA/cache/tenant-pay"
try agent-meta ls "$DATA/mesos/meta"
# cgroups: the limits are root's; no group of one's own where limits could
# be raised; the pids a container may hold are bounded.
for ctl in pids memory cpu; do
  rel=$(awk -F: -v c="$ctl" '{n=split($2,a,","); for(i=1;i<=n;i++) if (a[i]==c) print $3}' /proc/self/cgroup | head -1)
  dir=""
  for root in /sys/fs/cgroup/$ctl /sys/fs/cgroup/cpu,cpuacct; do [ -d "$root$rel" ] && { dir=$root$rel; break; }; done
  [ -n "$dir" ] || { echo "ROW cgroup-$ctl-found DENIED no $ctl group ($rel)"; continue; }
  case $ctl in
    pids) f=pids.max; v=max ;;
    memory) f=memory.limit_in_bytes; v=-1 ;;
    cpu) f=cpu.cfs_quota_us; v=-1 ;;
  esac
  try "cgroup-$ctl-own-limit" sh -c "echo $v > '$dir/$f'"
  try "cgroup-$ctl-parent-limit" sh -c "echo $v > '$dir/../$f'"
  try "cgroup-$ctl-mkdir" mkdir "$dir/attacker"
  try "cgroup-$ctl-parent-mkdir" mkdir "$dir/../attacker"
  if [ $ctl = pids ]; then
    lim=max d=$dir
    while [ -f "$d/pids.max" ]; do
      v=$(cat "$d/pids.max"); if [ "$v" != max ] && { [ "$lim" = max ] || [ "$v" -lt "$lim" ]; }; then lim=$v; fi
      d=$(dirname "$d")
    done
    [ "$lim" = max ] || [ "$lim" -gt 4096 ]; row pids-unbounded $? "the tightest pids.max above the task: $lim"
  fi
done
# The control plane: the agent and master refuse a task's calls, whatever
# ids it gives (pay's executor, pay's task), with no token or a made-up one.
EP="http://$MESOS_AGENT_ENDPOINT" FW="$MESOS_FRAMEWORK_ID"
PAYEXEC=$(basename "$(dirname "$(dirname "$PAYBOX")")") PAYTASK=$6
http() { c=$(curl -s -o /dev/null -m 5 -w '%{http_code}' "$@"); case $c in 2*) return 0 ;; *) return 1 ;; esac; }
upd() { printf '{"type":"UPDATE","framework_id":{"value":"%s"},"executor_id":{"value":"%s"},"update":{"status":{"task_id":{"value":"%s"},"state":"TASK_FAILED","source":"SOURCE_EXECUTOR","uuid":"AAAAAAAAAAAAAAAAAAAAAA=="}}}' "$FW" "$PAYEXEC" "$PAYTASK"; }
http -X POST -H 'Content-Type: application/json' -d "$(upd)" "$EP/api/v1/executor"; row agent-update-as-pay $? ""
http -X POST -H 'Content-Type: application/json' -H "Authorization: Bearer made-up" -d "$(upd)" "$EP/api/v1/executor"; row agent-update-made-up-token $? ""
http -X POST -H 'Content-Type: application/json' -d "{\"type\":\"SUBSCRIBE\",\"framework_id\":{\"value\":\"$FW\"},\"executor_id\":{\"value\":\"$PAYEXEC\"},\"subscribe\":{}}" "$EP/api/v1/executor"; row agent-subscribe-as-pay $? ""
http "$EP/files/read?path=$PAYBOX/stdout&offset=0"; row agent-files-read $? ""
http "$EP/state"; row master-state $? ""
echo "end-of""-probe"
`

// search's task tries, from inside, to gain privileges (setuid programs,
// capabilities, user namespaces), to reach pay's processes (signals,
// ptrace, /proc/PID/root, IPC), the scheduler's files and pay's, and to
// raise its own cgroup limits or escape them; several starts, since a
// privilege left to chance (which thread forks) shows in some starts only.
func TestTasksGainNothingOnTheHost(t *testing.T) {
	w := newWorld(t, 2)
	// Each app is an executor of its own: eight starts of the init.
	const shards = 8
	files := map[string]string{"bin/probe.sh": hostProbe,
		"bin/run.sh": fmt.Sprintf("#!/bin/sh\nexec sh \"$(dirname \"$0\")/probe.sh\" %d %s %s %s %s '%s'\n",
			w.payPid, w.metrics, w.keyFile, w.data, w.paySandbox, w.payTaskID)}
	for i := range shards {
		w.attack(fmt.Sprintf("probe%d", i), "bin/run.sh", 1, files)
	}
	var outs []string
	harness.Eventually(t, waitLong, pollEvery, func() bool {
		outs = w.stdouts("probe*", "end-of-probe")
		return len(outs) == shards
	}, "search's %d probes to finish", shards)
	row := regexp.MustCompile(`(?m)^ROW (\S+) (ALLOWED|DENIED) ?(.*)$`)
	seen := map[string]int{}
	for i, out := range outs {
		for _, m := range row.FindAllStringSubmatch(out, -1) {
			seen[m[1]]++
			if m[2] == "ALLOWED" {
				t.Errorf("CROSSED (start %d): %s: %s", i, m[1], m[3])
			}
		}
		if found := w.secretsIn(out); len(found) > 0 {
			t.Errorf("CROSSED (start %d): the probe's output holds %v", i, found)
		}
	}
	if len(seen) < 30 {
		t.Errorf("only %d rows ran: %v\n%s", len(seen), seen, harness.Tail(strings.Join(outs, "\n"), 80))
	}
	for name, n := range seen {
		if n != shards {
			t.Errorf("row %s ran in %d of %d starts", name, n, shards)
		}
	}
	if !alive(w.payPid) {
		t.Errorf("pay's task %d did not survive", w.payPid)
	}
	t.Logf("%d rows in each of %d starts: %s", len(seen), shards, strconv.Quote(strings.Join(keys(seen), " ")))
}
