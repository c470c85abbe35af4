package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/config"
	"github.com/ejcloud/elasticjob/election"
	"github.com/ejcloud/elasticjob/metrics"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/scheduler"
	"github.com/ejcloud/elasticjob/scheduler/history"
	"github.com/ejcloud/elasticjob/scheduler/webhook"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/cache"
	zkstore "github.com/ejcloud/elasticjob/store/zk"
	"github.com/ejcloud/elasticjob/workflow/engine"
)

// leadership is leader election as this process uses it: election.Solo in
// the embedded mode, an election.Candidate on ZooKeeper.
type leadership interface {
	Run(ctx context.Context) error
	Terms() <-chan *election.Term
	Current() *election.Term
	Leader() (election.Member, bool)
	Members(ctx context.Context) ([]election.Member, error)
	Self() election.Member
}

// electionDir is where the candidates are (SPEC §3).
const electionDir = "/ha/election"

// newLeadership joins the election on the registry's ZooKeeper session, or
// makes this instance the leader of one.
func newLeadership(cfg config.Config, backend store.KV, log *slog.Logger) leadership {
	self := election.Member{ID: instanceID(), URL: cfg.Advertised(), Hostname: cfg.Hostname, Started: time.Now().UTC()}
	zk, ok := backend.(*zkstore.Store)
	if !ok {
		return election.NewSolo(self, clock.Real{})
	}
	sess := zk.Session()
	cand := election.New(election.Config{Conn: sess.Conn(), Dir: sess.ZPath(electionDir), StoreDir: electionDir,
		ACL: sess.ACL(), Self: self, SessionTimeout: cfg.ZKSessionTimeout, Log: log.With("subsystem", "election")})
	sess.OnState(cand.SessionEvent)
	return cand
}

func instanceID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// notLeaderFence makes a write fail with registry.ErrFenced: it checks a
// node no candidate ever creates.
var notLeaderFence = []store.Op{store.Check(electionDir+"/not-the-leader", store.AnyVersion)}

// apiFence fences the API's writes with the current term: a write served
// while this instance leads commits only while it still does.
func apiFence(lead leadership) func() []store.Op {
	return func() []store.Op {
		if t := lead.Current(); t != nil {
			return t.Fence()
		}
		if _, solo := lead.(*election.Solo); solo {
			return nil
		}
		return notLeaderFence
	}
}

// leaderWork is what this instance runs while it leads: the scheduler's
// loops, the Mesos subscription, the workflow engine and the statistics
// collector, one set per term, each under the term's context.
type leaderWork struct {
	cfg      config.Config
	log      *slog.Logger
	kv       *cache.KV // the registry cache
	masters  *masters
	exe      delivery
	observer scheduler.Observer
	hooks    *webhook.Sender
	coll     *history.Collector // nil without history
	mx       *metrics.Metrics
	// resolveAppURL rewrites hosted package URLs to this instance's own.
	resolveAppURL func(string) string
	current       atomic.Pointer[scheduler.Scheduler]
	// flowObserver records workflow runs (metrics, history); workflow.go.
	flowObserver engine.Observer
	kube         *kubeEngines // the Kubernetes engine's side (nil: Mesos); engine.go
}

// run serves every term this instance is given until ctx ends.
func (l *leaderWork) run(ctx context.Context, lead leadership) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case term := <-lead.Terms():
			if term.Context().Err() != nil {
				continue
			}
			began := time.Now()
			err := l.serveTerm(term)
			if err != nil && ctx.Err() == nil {
				l.log.Error("leader work failed; leaving the term", "err", err)
				term.End(err)
				if wait := time.Second - time.Since(began); wait > 0 {
					select { // do not spin on a failure that recurs at once
					case <-ctx.Done():
					case <-time.After(wait):
					}
				}
			}
		}
	}
}

// serveTerm runs the leader's loops until the term ends, and returns once
// every one of them has stopped, so the next term never overlaps this one.
func (l *leaderWork) serveTerm(term *election.Term) error {
	ctx := term.Context()
	log := l.log.With("term", term.Seq())
	reg := registry.New(l.kv)
	reg.MaxPending = l.cfg.JobStateQueue
	reg.Fence = term.Fence
	caught := time.Now()
	if err := l.catchUp(ctx, reg, term); err != nil {
		if ctx.Err() != nil {
			return nil // the term ended first
		}
		return err
	}
	log.Info("registry cache caught up with the terms before", "took", time.Since(caught).Round(time.Microsecond))
	fwID, err := reg.FrameworkID(ctx)
	if err != nil {
		return fmt.Errorf("read framework id: %w", err)
	}
	client, err := l.newEngine(reg, fwID, log)
	if err != nil {
		return err
	}
	driver := scheduler.Guard(client, term.Valid)
	sched := scheduler.New(scheduler.Deps{
		Registry: reg, Driver: driver, Clock: clock.Real{}, Log: log.With("subsystem", "scheduler"),
		Observer: l.observer, Notifier: l.hooks,
		Options: scheduler.Options{
			ExecutorCommand: l.exe.command, ExecutorURIs: l.exe.uris, ExecutorEnv: executorEnv(l.cfg), RefuseIdle: l.cfg.OfferRefuse,
			OfferHold: l.cfg.OfferHold, FireLead: l.cfg.FireLead, Reconcile: time.Duration(l.cfg.ReconcileMinutes) * time.Minute,
			Location: l.cfg.Location, ReconcileWait: l.cfg.ReconcileWait, ResolveAppURL: l.resolveAppURL,
			MaxRoundTasks: maxRoundTasks(l.cfg),
		},
	})
	log.Info("leading", "framework_id", fwID, "node", term.Node())
	l.current.Store(sched)
	l.mx.Leading(true)
	defer func() { l.current.Store(nil); l.mx.Leading(false) }()
	flows := l.workflowEngine(reg, driver, log)
	errc := make(chan error, 4)
	n := 3
	go func() { errc <- sched.Run(ctx) }()
	go func() { errc <- client.Run(ctx, sched) }()
	go func() { errc <- flows.Run(ctx) }()
	if l.coll != nil {
		n++
		go func() { errc <- l.coll.Run(ctx) }()
	}
	var first error
	for range n {
		if err := <-errc; err != nil && first == nil && ctx.Err() == nil {
			first = err
			term.End(err) // one loop failed: stop the others
		}
	}
	log.Info("no longer leading", "cause", context.Cause(ctx))
	if errors.Is(first, context.Canceled) {
		first = nil
	}
	return first
}

// catchUpWait bounds how long a new term waits for the registry cache to
// catch up with the terms before it.
const catchUpWait = 30 * time.Second

// catchUp returns once the registry cache holds every write made before
// the term began. The election hands a standby the term as soon as the
// old leader's node is gone, while the notifications of that leader's last
// writes (a launch, a task's end) may still be queued to the cache: a
// leader reading the copy before they are applied would take a finished
// task for running and fail it over, or a launched one for unknown and
// kill it. The term's first write, fenced, is read back through the
// cache's watch, which applies notifications in order.
func (l *leaderWork) catchUp(ctx context.Context, reg *registry.Registry, term *election.Term) error {
	value, err := json.Marshal(map[string]any{"term": term.Seq(), "node": term.Node(), "at": time.Now().UTC()})
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, catchUpWait)
	defer cancel()
	if err := l.kv.Barrier(cctx, registry.LeaderTermPath, value, reg.Commit); err != nil {
		return fmt.Errorf("catch up with the registry before leading: %w", err)
	}
	return nil
}

// scheduler returns the scheduler of the term in force, or nil.
func (l *leaderWork) scheduler() *scheduler.Scheduler { return l.current.Load() }

// apiCluster adapts the leadership to what the API needs to route writes.
type apiCluster struct{ lead leadership }

func (c apiCluster) Leading() bool {
	t := c.lead.Current()
	return t != nil && t.Valid() == nil
}

func (c apiCluster) LeaderURL() (string, bool) {
	m, ok := c.lead.Leader()
	if !ok || m.URL == "" {
		return "", false
	}
	return m.URL, true
}

func (c apiCluster) SelfID() string { return c.lead.Self().ID }

// peersOf lists the base URLs of the other scheduler instances (hosted
// packages are pulled from them).
func peersOf(lead leadership) func() []string {
	return func() []string {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		members, err := lead.Members(ctx)
		if err != nil {
			return nil
		}
		var out []string
		for _, m := range members {
			if m.ID != lead.Self().ID && m.URL != "" {
				out = append(out, m.URL)
			}
		}
		return out
	}
}

// zkRoundTasks bounds a launch round on the ZooKeeper registry: its commit
// is one multi (a running entry and a dequeue per task, ~1 KB) and must
// stay well under ZooKeeper's 1 MB request limit.
const zkRoundTasks = 512

// roundTasks bounds a launch round on the embedded registry. Unbounded, a
// round on a large cluster's offers launched tens of thousands of tasks at
// once, whose updates came back as one wave that held the next rounds for
// half a minute; bounded too tightly (1,024), the round's fixed cost (the
// snapshot of a ready queue of 100,000 jobs) dominated and launches fell
// to 270/s.
const roundTasks = 8192

func maxRoundTasks(cfg config.Config) int {
	if cfg.ZKServers != "" {
		return zkRoundTasks
	}
	return roundTasks
}
