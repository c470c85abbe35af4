package embedded

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/internal/datadriven"
	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// TestRestartScenarios runs testdata/restart/*.txt: each case is "restart"
// and its steps, agents started and stopped in turn on one work directory
// with real executor processes, a framework subscribing to each; the
// output is what the steps observe (see restartStep for the steps).
func TestRestartScenarios(t *testing.T) {
	runScenarioDir(t, "restart", func(t *testing.T, c scenarioCase) []string {
		if c.cmd != "restart" || len(c.args) > 0 {
			c.fatalf(t, "want \"restart\" and its steps, got %q", c.cmd)
		}
		r := &restartRun{t: t, c: c, pids: map[string]int{}, last: map[string]mesos.TaskStatus{}}
		r.start = restartable(t, func(cfg *Config) { r.mutate(cfg) })
		for i, l := range c.in {
			r.line = c.line + 1 + i
			w := strings.Fields(l)
			if len(w) == 0 {
				continue
			}
			r.step(w[0], w[1:])
		}
		return r.out
	})
}

// restartRun is one restart scenario being run.
type restartRun struct {
	t      *testing.T
	c      scenarioCase
	line   int
	start  func() *Cluster
	mutate func(*Config)
	agent  *Cluster
	fw     *sched
	fwID   string
	pids   map[string]int              // executor id → pid (step "pid")
	last   map[string]mesos.TaskStatus // task id → its last update seen
	died   time.Time                   // when await-dead saw a process end
	out    []string
}

func (r *restartRun) fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("%s:%d: "+format, append([]any{r.c.file, r.line}, args...)...)
}

func (r *restartRun) printf(format string, args ...any) {
	r.out = append(r.out, fmt.Sprintf(format, args...))
}

// step runs one step:
//
//	start [reregistration-timeout=D] [recover=cleanup]  an agent on the work directory; prints
//	                                  what it recovered
//	stop                              Close the agent
//	subscribe [checkpoint]            the framework (again, with its id) to the agent
//	launch T executor=E mode=M data=D [fresh]  task T on executor E (M: the test executor's mode;
//	                                  D: the task's data, hang or crash); fresh: on a fresh offer
//	update T [ack] [dated] [message]  waits for T's next update; prints its state, source and
//	                                  reason, "again" when it is T's previous update resent,
//	                                  its message if asked;
//	                                  dated: whether it is dated before the last await-dead
//	                                  saw the process end and after T's previous update
//	reconcile T                       sends RECONCILE for T
//	offered-cpus                      prints the cpus of a fresh offer (the whole free pool)
//	container E                       fails unless E's process is in its cgroup with its limits
//	                                  (nothing to check with isolation off)
//	await-cleaned                     waits for recover=cleanup to end
//	try-subscribe                     prints the HTTP status of a SUBSCRIBE
//	tasks                             prints how many tasks the agent knows
//	pid E                             waits for E's process and remembers its pid
//	process E                         prints whether E's process (pid) runs
//	await-dead E                      waits for E's process to end
//	signal E STOP|KILL                signals E's process
//	await-resubscribed E              waits for E (same pid) to subscribe to the agent again
//	kill T                            sends KILL for T
//	frameworks                        prints how many frameworks the agent knows
//	checkpointed                      prints whether any framework was checkpointed
func (r *restartRun) step(cmd string, args []string) {
	r.t.Helper()
	kv := datadriven.KV(args)
	arg := func(i int) string {
		if len(args) <= i {
			r.fatalf("%s needs more words", cmd)
		}
		return args[i]
	}
	switch cmd {
	case "start":
		r.mutate = func(cfg *Config) {
			if d := kv["reregistration-timeout"]; d != "" {
				v, err := time.ParseDuration(d)
				if err != nil {
					r.fatalf("reregistration-timeout=%q: %v", d, err)
				}
				cfg.ExecutorReregistrationTimeout = v
			}
			switch kv["recover"] {
			case "":
			case RecoverCleanup:
				cfg.Recover = RecoverCleanup
			default:
				r.fatalf("recover=%q: want cleanup", kv["recover"])
			}
		}
		prev := ""
		if r.agent != nil {
			prev = r.agent.URL()
		}
		r.agent = r.start()
		moved := ""
		if prev != "" && r.agent.URL() != prev {
			moved = " (at another address)"
		}
		r.printf("started: %d executors recovered%s", r.agent.Recovered(), moved)
	case "stop":
		if err := r.agent.Close(); err != nil {
			r.fatalf("close: %v", err)
		}
	case "subscribe":
		info := frameworkInfo()
		if kv["checkpoint"] == "true" {
			info = checkpointing(r.fwID)
		}
		r.fw = subscribe(r.t, r.agent, info)
		r.fwID = r.fw.fwID
	case "launch":
		var o mesos.Offer
		if kv["fresh"] == "true" {
			o = r.fw.freshOffer()
		} else {
			o = r.fw.offer()
		}
		r.fw.launch(o, taskInfo(r.agent, arg(0), kv["data"], execInfo(r.t, kv["executor"], kv["mode"], 0.5, 64), 1, 128))
	case "update":
		st := r.fw.update(arg(0))
		reason := ""
		if st.Reason != nil {
			reason = " " + st.GetReason().String()
		}
		prev, seen := r.last[arg(0)]
		if seen && string(prev.UUID) == string(st.UUID) {
			reason += " again"
		}
		if kv["dated"] == "true" {
			at := time.Unix(0, int64(st.GetTimestamp()*1e9))
			reason += fmt.Sprintf(" dated-before-death=%v", seen && !at.After(r.died) && !at.Before(time.Unix(0, int64(prev.GetTimestamp()*1e9))))
		}
		if kv["message"] == "true" {
			reason += fmt.Sprintf(" %q", st.GetMessage())
		}
		r.last[arg(0)] = st
		r.printf("%s %s from %s%s", arg(0), st.GetState(), st.GetSource(), reason)
		if kv["ack"] == "true" {
			r.fw.ack(st)
		}
	case "pid":
		r.pids[arg(0)] = executorPid(r.t, r.agent, arg(0))
	case "process":
		r.printf("%s process %s", arg(0), map[bool]string{true: "runs", false: "gone"}[alive(r.pid(arg(0)))])
	case "await-dead":
		pid := r.pid(arg(0))
		eventually(r.t, arg(0)+" to end", func() bool { return !alive(pid) })
		r.died = time.Now()
	case "signal":
		sig := map[string]syscall.Signal{"STOP": syscall.SIGSTOP, "KILL": syscall.SIGKILL}[arg(1)]
		if sig == 0 {
			r.fatalf("signal %q: want STOP or KILL", arg(1))
		}
		if err := syscall.Kill(r.pid(arg(0)), sig); err != nil {
			r.fatalf("signal: %v", err)
		}
	case "await-resubscribed":
		pid := r.pid(arg(0))
		eventually(r.t, arg(0)+" to subscribe again", func() bool {
			for _, e := range r.agent.Snapshot().Executors {
				if e.ID == arg(0) && e.State == "RUNNING" && e.PID == pid {
					return true
				}
			}
			return false
		})
	case "kill":
		r.fw.mustCall(&scheduler.Call{Type: scheduler.Call_KILL, Kill: &scheduler.Call_Kill{TaskID: mesos.TaskID{Value: arg(0)}}})
	case "reconcile":
		r.fw.mustCall(&scheduler.Call{Type: scheduler.Call_RECONCILE, Reconcile: &scheduler.Call_Reconcile{
			Tasks: []scheduler.Call_Reconcile_Task{{TaskID: mesos.TaskID{Value: arg(0)}}}}})
	case "offered-cpus":
		r.printf("offered %v cpus", scalarOf(r.fw.freshOffer().Resources, "cpus"))
	case "container":
		r.inContainer(r.pid(arg(0)))
	case "await-cleaned":
		select {
		case <-r.agent.Cleaned():
		case <-time.After(deadline):
			r.fatalf("cleanup did not end")
		}
	case "try-subscribe":
		_, code := trySubscribe(r.t, r.agent.URL(), checkpointing(r.fwID))
		r.printf("subscribe: %d", code)
	case "tasks":
		r.printf("%d tasks", len(r.agent.Snapshot().Tasks))
	case "frameworks":
		r.printf("%d frameworks", len(r.agent.Snapshot().Frameworks))
	case "checkpointed":
		_, err := os.Stat(filepath.Join(r.agent.cfg.WorkDir, "meta", "slaves", r.agent.AgentID(), "frameworks"))
		r.printf("checkpointed: %v", err == nil)
	default:
		r.fatalf("unknown step %q", cmd)
	}
}

func (r *restartRun) pid(exec string) int {
	pid, ok := r.pids[exec]
	if !ok {
		r.fatalf("no pid of %s (step \"pid %s\" first)", exec, exec)
	}
	return pid
}

// inContainer checks that the agent's one live executor, pid, is in its
// container's cgroup with its and its tasks' memory limit.
func (r *restartRun) inContainer(pid int) {
	c := r.agent
	if !c.iso.on() {
		return
	}
	c.mu.Lock()
	e := c.agents[0].liveExecutors()[0]
	g, want := e.cgroup, e.limits
	c.mu.Unlock()
	if g == nil || !slices.Contains(g.Procs(), pid) {
		r.fatalf("executor %d is not in its container cgroup %v", pid, g)
	}
	container, _ := want(c.iso.pidsMax, c.iso.quota)
	if got := g.Stats().MemoryLimit; got != container.MemoryBytes {
		r.fatalf("container memory limit %d, want %d", got, container.MemoryBytes)
	}
}
