package conformance

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// Case is one behaviour of the table.
type Case struct {
	Name string
	Run  func(e *Env)
}

// Cases is the table, in the order the package documentation lists it.
var Cases = []Case{
	{"gang", gang},
	{"history", history},
	{"kill", kill},
	{"failover", failoverOnLoss},
	{"daemon", daemon},
	{"logs", logs},
	{"reconcile", reconcile},
	{"why-waiting", whyWaiting},
}

// Run runs every case of the table against the engine, each as a subtest of t named by
// the case; a case the engine declares it cannot do is skipped with its reason.
func Run(t *testing.T, e Engine) {
	caps := e.Caps()
	for name, why := range caps.Skip {
		if !known(name) {
			t.Fatalf("%s declares it cannot do %q, which is no case of the table", e.Name(), name)
		}
		if why == "" {
			t.Fatalf("%s declares it cannot do %s without saying why", e.Name(), name)
		}
	}
	for _, c := range Cases {
		t.Run(c.Name, func(t *testing.T) {
			if why, ok := caps.Skip[c.Name]; ok {
				t.Skipf("%s cannot do %s: %s", e.Name(), c.Name, why)
			}
			if caps.Parallel {
				t.Parallel()
			}
			env := &Env{T: t, Engine: e.Name(), Caps: caps, Cluster: e.Cluster(t),
				DataDir: filepath.Join(t.TempDir(), "data"), rec: newRecorder(t, caps.Report)}
			env.S = env.Cluster.Start(t, env.DataDir)
			env.S.publishApp(t, env.rec)
			c.Run(env)
		})
	}
}

func known(name string) bool {
	for _, c := range Cases {
		if c.Name == name {
			return true
		}
	}
	return false
}

// Env is what a case runs with: its cluster, its scheduler, the data directory the scheduler
// runs on (a restart reuses it) and the recorder of what its shards did.
type Env struct {
	T       *testing.T
	Engine  string
	Caps    Caps
	Cluster Cluster
	S       *Scheduler
	DataDir string
	rec     *recorder
}

// eventually polls cond until it holds, failing the case with what was awaited.
func (e *Env) eventually(cond func() bool, what string, args ...any) {
	e.T.Helper()
	harness.Eventually(e.T, e.Caps.wait(), pollEvery, cond, what, args...)
}

const pollEvery = 100 * time.Millisecond

// late is a message argument evaluated when the message is formatted: the state at the
// deadline.
type late func() any

func (l late) String() string { return fmt.Sprint(l()) }
