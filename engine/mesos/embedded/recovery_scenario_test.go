package embedded

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/internal/datadriven"
	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// TestRecoveryScenarios runs testdata/recovery/*.txt through the recovery
// decisions of recovery.go (see datadriven_test.go for the file shape and
// recovery_scenario_test.go's commands below).
func TestRecoveryScenarios(t *testing.T) { runScenarioDir(t, "recovery", runRecoveryCase) }

// scenarioNow is "now" of the time commands; times are written as seconds
// from it ("-60"), "zero" for the zero time.
var scenarioNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// recoveryArgs are the keys each command takes.
var recoveryArgs = map[string][]string{
	"fate": {"completed", "alive"}, "order": {"alive"}, "latest-sign": {"alive", "writes"},
	"gone-at": {"last-seen", "orphaned"}, "replay": nil, "lost-in-restart": {"known"},
	"keep-on-close": {"checkpointed", "started", "state", "recovered", "mode"},
	"loss":          {"partition-aware", "kind"}, "keep-framework": {"executors", "tasks"},
}

func runRecoveryCase(t *testing.T, c scenarioCase) []string {
	keys, ok := recoveryArgs[c.cmd]
	if !ok {
		c.fatalf(t, "unknown command %q", c.cmd)
	}
	for k := range c.args {
		if !slices.Contains(keys, k) {
			c.fatalf(t, "%s takes no %s= (it takes %v)", c.cmd, k, keys)
		}
	}
	switch c.cmd {
	case "fate":
		return []string{fateName(fateOf(ckRun{completed: c.flag(t, "completed")}, c.flag(t, "alive")))}
	case "order":
		return []string{recoveryOrderCase(t, c)}
	case "latest-sign":
		var writes []time.Time
		if w := c.args["writes"]; w != "" {
			for _, s := range strings.Split(w, ",") {
				writes = append(writes, c.at(t, s))
			}
		}
		return []string{sinceNow(latestSign(c.at(t, c.args["alive"]), writes, scenarioNow))}
	case "gone-at":
		return []string{sinceNow(goneAt(c.at(t, c.args["last-seen"]), c.flag(t, "orphaned"), scenarioNow))}
	case "replay":
		return replayCase(t, c)
	case "keep-on-close":
		keep := keepOnClose(c.flag(t, "checkpointed"), c.flag(t, "started"), c.execState(t), c.flag(t, "recovered"), c.args["mode"])
		return []string{map[bool]string{true: "left running", false: "shut down"}[keep]}
	case "loss":
		return []string{lossState(c.flag(t, "partition-aware"), c.loss(t)).String()}
	case "keep-framework":
		keep := keepRecoveredFramework(c.int(t, "executors"), c.int(t, "tasks"))
		return []string{map[bool]string{true: "kept", false: "dropped"}[keep]}
	case "lost-in-restart":
		return []string{lostInRestartCase(t, c)}
	}
	c.fatalf(t, "unknown command %q", c.cmd)
	return nil
}

func fateName(f runFate) string {
	switch f {
	case fateReattach:
		return "reattach"
	case fateEnded:
		return "ended"
	case fateGone:
		return "gone"
	}
	return fmt.Sprintf("fate(%d)", int(f))
}

// recoveryOrderCase: input lines "run <container> [completed]"; args
// alive=<container>,...; the output is the containers in recovery order.
func recoveryOrderCase(t *testing.T, c scenarioCase) string {
	var runs []ckRun
	for _, l := range c.in {
		w := strings.Fields(l)
		if len(w) < 2 || w[0] != "run" {
			c.fatalf(t, "want \"run <container> [completed]\", got %q", l)
		}
		runs = append(runs, ckRun{containerID: w[1], completed: slices.Contains(w[2:], "completed")})
	}
	alive := map[string]bool{}
	for _, id := range c.list("alive") {
		alive[id] = true
	}
	before := slices.Clone(runs)
	got := recoveryOrder(runs, alive)
	if !slices.EqualFunc(before, runs, func(a, b ckRun) bool { return a.containerID == b.containerID }) {
		c.fatalf(t, "recoveryOrder reordered its input")
	}
	ids := make([]string, len(got))
	for i, r := range got {
		ids[i] = r.containerID
	}
	return strings.Join(ids, " ")
}

// replayCase: input lines are a task's checkpoint records in order:
// "task [group]", "launched", "update <STATE> <uuid> [executor]",
// "ack <uuid>", "garbage" (an update that cannot be decoded).
func replayCase(t *testing.T, c scenarioCase) []string {
	id := mesos.TaskID{Value: "t1"}
	var records []record
	for _, l := range c.in {
		w := strings.Fields(l)
		switch {
		case len(w) >= 1 && w[0] == "task":
			records = append(records, record{Task: []byte{1}, Group: slices.Contains(w[1:], "group")})
		case len(w) == 1 && w[0] == "launched":
			records = append(records, record{Launched: true})
		case len(w) >= 3 && w[0] == "update":
			state, ok := mesos.TaskState_value[w[1]]
			if !ok {
				c.fatalf(t, "unknown task state %q", w[1])
			}
			st := mesos.TaskStatus{TaskID: id, State: mesos.TaskState(state).Enum(), UUID: []byte(w[2])}
			b, err := st.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			records = append(records, record{Update: b, Executor: slices.Contains(w[3:], "executor")})
		case len(w) == 2 && w[0] == "ack":
			records = append(records, record{Ack: []byte(w[1])})
		case len(w) == 1 && w[0] == "garbage":
			records = append(records, record{Update: []byte{0xff, 0xff}})
		default:
			c.fatalf(t, "unknown record %q", l)
		}
	}
	r := replayTask(id, records)
	if r.status.GetState() != r.state {
		c.fatalf(t, "status %v disagrees with state %v", r.status.GetState(), r.state)
	}
	pending := make([]string, len(r.pending))
	for i, p := range r.pending {
		pending[i] = string(p.status.UUID)
	}
	return []string{
		"state " + r.state.String(),
		"pending [" + strings.Join(pending, " ") + "]",
		fmt.Sprintf("launched=%v group=%v forget=%v released=%v awaits-launch=%v",
			r.launched, r.group, r.forget, r.released, awaitsLaunch(r.launched, r.state)),
	}
}

// lostInRestartCase: input lines "task <id> [launched] state=<STATE>";
// args known=<id>,...; the output is the lost ids ("none").
func lostInRestartCase(t *testing.T, c scenarioCase) string {
	var live []*task
	for _, l := range c.in {
		w := strings.Fields(l)
		if len(w) < 2 || w[0] != "task" {
			c.fatalf(t, "want \"task <id> [launched] state=<STATE>\", got %q", l)
		}
		m := datadriven.KV(w[2:])
		state, ok := mesos.TaskState_value[m["state"]]
		if !ok {
			c.fatalf(t, "unknown task state %q", m["state"])
		}
		live = append(live, &task{info: mesos.TaskInfo{TaskID: mesos.TaskID{Value: w[1]}}, launched: m["launched"] == "true",
			state: mesos.TaskState(state)})
	}
	known := map[string]bool{}
	for _, id := range c.list("known") {
		known[id] = true
	}
	var ids []string
	for _, tk := range lostInRestart(live, known) {
		ids = append(ids, tk.info.TaskID.Value)
	}
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, " ")
}

// sinceNow writes a time as the scenario files do.
func sinceNow(at time.Time) string {
	switch {
	case at.IsZero():
		return "zero"
	case at.Equal(scenarioNow):
		return "now"
	}
	return strconv.FormatFloat(at.Sub(scenarioNow).Seconds(), 'f', -1, 64)
}

func (c scenarioCase) flag(t *testing.T, key string) bool {
	switch c.args[key] {
	case "", "false":
		return false
	case "true":
		return true
	}
	c.fatalf(t, "%s=%q: want true or false", key, c.args[key])
	return false
}

func (c scenarioCase) int(t *testing.T, key string) int {
	n, err := strconv.Atoi(c.args[key])
	if err != nil {
		c.fatalf(t, "%s=%q: want a number", key, c.args[key])
	}
	return n
}

func (c scenarioCase) list(key string) []string {
	if c.args[key] == "" {
		return nil
	}
	return strings.Split(c.args[key], ",")
}

func (c scenarioCase) at(t *testing.T, s string) time.Time {
	if s == "" || s == "zero" {
		return time.Time{}
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		c.fatalf(t, "time %q: want seconds from now or zero", s)
	}
	return scenarioNow.Add(time.Duration(n * float64(time.Second)))
}

func (c scenarioCase) execState(t *testing.T) execState {
	switch c.args["state"] {
	case "launching":
		return execLaunching
	case "running":
		return execRunning
	case "terminating":
		return execTerminating
	case "terminated":
		return execTerminated
	}
	c.fatalf(t, "state=%q: want launching, running, terminating or terminated", c.args["state"])
	return 0
}

func (c scenarioCase) loss(t *testing.T) loss {
	switch c.args["kind"] {
	case "dropped":
		return lossDropped
	case "gone":
		return lossGone
	case "unknown":
		return lossUnknown
	case "unknown-on-agent":
		return lossUnknownOnAgent
	}
	c.fatalf(t, "kind=%q: want dropped, gone, unknown or unknown-on-agent", c.args["kind"])
	return 0
}
