package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ejcloud/elasticjob/internal/loopback"
)

// Etcd is the etcd shape (registry=etcd): three schedulers, each with an
// etcd member of its own in its data directory, no ZooKeeper; each member
// is reached by the others through a peer proxy (its advertised peer URL;
// it listens behind it, etcd_listen_peer_url), so one scheduler can be
// cut off from its peers but not from mesos-local, which each scheduler
// reaches through a proxy of its own as in the ZooKeeper shape. Killing a
// scheduler kills its member; it restarts on its data directory. Two
// killed at once is the quorum lost.
type Etcd struct {
	ZK                     // mesos-local, the schedulers, the leader and standby picks
	LeaseTTL time.Duration // etcd_lease_ttl (1 s when 0)
	// Extra are more flags for every scheduler (the real-Mesos shape's).
	Extra []string

	peers []*peerProxy // peers[i] in front of scheduler i's member
}

var _ Shape = (*Etcd)(nil)

func (e *Etcd) Name() string { return "etcd" }

func (e *Etcd) lease() time.Duration {
	if e.LeaseTTL <= 0 {
		return time.Second
	}
	return e.LeaseTTL
}

func (e *Etcd) Start(ctx context.Context) error {
	if err := e.startMesos(ctx); err != nil {
		return err
	}
	return e.startSchedulers(ctx)
}

// startSchedulers starts the three schedulers and their members against
// the Mesos master at e.mesosURL, each through a proxy of its own.
func (e *Etcd) startSchedulers(ctx context.Context) error {
	return e.startMembers(ctx, func(int, []string) (*proxy, []string, error) {
		mp, mesosURL, err := e.mesosProxy()
		return mp, []string{"--mesos-url", mesosURL}, err
	})
}

// startMembers starts the three schedulers with their etcd members; engine
// gives scheduler i (of those at the API base URLs bases) its link to the
// engine (a proxy of its own, sched.mesos) and the flags naming the
// engine behind it.
func (e *Etcd) startMembers(ctx context.Context, engine func(i int, bases []string) (*proxy, []string, error)) error {
	type ports struct{ http, client, peer int }
	var ps []ports
	var cluster []string
	for i := range 3 {
		var p ports
		for _, at := range []*int{&p.http, &p.client, &p.peer} {
			n, err := loopback.Port()
			if err != nil {
				return err
			}
			*at = n
		}
		pp, err := newPeerProxy("127.0.0.1:" + strconv.Itoa(p.peer))
		if err != nil {
			return err
		}
		e.peers = append(e.peers, pp)
		ps = append(ps, p)
		cluster = append(cluster, "s"+strconv.Itoa(i+1)+"="+pp.url())
	}
	var bases []string
	for _, p := range ps {
		bases = append(bases, fmt.Sprintf("http://127.0.0.1:%d", p.http))
	}
	for i, p := range ps {
		link, engineArgs, err := engine(i, bases)
		if err != nil {
			return err
		}
		name := "s" + strconv.Itoa(i+1)
		s := &sched{mesos: link, base: bases[i]}
		s.p = &proc{name: name, bin: filepath.Join(e.Bin, "scheduler"), log: filepath.Join(e.Dir, name+".log")}
		s.p.args = append([]string{"--data-dir", filepath.Join(e.Dir, name), "--http-port", strconv.Itoa(p.http),
			"--registry", "etcd", "--etcd-name", name, "--etcd-peers", strings.Join(cluster, ","),
			"--etcd-client-url", fmt.Sprintf("http://127.0.0.1:%d", p.client),
			"--etcd-listen-peer-url", fmt.Sprintf("http://127.0.0.1:%d", p.peer),
			"--etcd-lease-ttl", e.lease().String(),
			"--allow-file-app-urls", "true", "--time-zone", "UTC",
			"--log-level", "info"}, engineArgs...) // history: replicated through etcd to each member's trace.db
		s.p.args = append(s.p.args, e.Extra...)
		e.scheds = append(e.scheds, s)
	}
	// each member waits for a quorum of the others: all start at once
	for _, s := range e.scheds {
		if err := s.p.start(); err != nil {
			return err
		}
	}
	for _, s := range e.scheds {
		if err := e.await(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// mesosProxy is a proxy of one scheduler's own in front of mesos-local,
// and the URL the scheduler reaches mesos-local at through it.
func (e *Etcd) mesosProxy() (*proxy, string, error) {
	host := strings.TrimPrefix(strings.TrimPrefix(e.mesosURL, "http://"), "https://")
	host, path, _ := strings.Cut(host, "/")
	mp, err := newProxy(host)
	if err != nil {
		return nil, "", err
	}
	u := "http://" + mp.addr()
	if path != "" {
		u += "/" + path
	}
	return mp, u, nil
}

// restartAll starts the stopped schedulers together (a member restarted
// alone after a quorum loss waits for another) and waits for each.
func (e *Etcd) restartAll(ss []*sched) func(context.Context) error {
	return func(ctx context.Context) error {
		var errs []error
		for _, s := range ss {
			if !s.p.running() {
				errs = append(errs, s.p.start())
			}
		}
		for _, s := range ss {
			errs = append(errs, e.await(ctx, s))
		}
		return errors.Join(errs...)
	}
}

// isolate cuts scheduler s's member off from the others (both ways) or,
// with s nil, joins them all again.
func (e *Etcd) isolate(s *sched) {
	var url string
	for i, t := range e.scheds {
		if t == s {
			url = e.peers[i].url()
		}
	}
	for i, t := range e.scheds {
		e.peers[i].set(s != nil && t == s, url)
	}
}

// lossy makes the peer links of s lose this share of their packets
// (nil: none lose any): its member's own proxy on every connection, the
// others' on what it sends.
func (e *Etcd) lossy(s *sched, loss float64) {
	var url string
	for i, t := range e.scheds {
		if t == s {
			url = e.peers[i].url()
		}
	}
	for i, t := range e.scheds {
		switch {
		case s == nil:
			e.peers[i].setLoss("", 0)
		case t == s:
			e.peers[i].setLoss("*", loss)
		default:
			e.peers[i].setLoss(url, loss)
		}
	}
}

// drawLoss draws a packet loss rate for a lossy-link fault: 5-30%.
func drawLoss(rng *rand.Rand) float64 { return 0.05 + 0.25*rng.Float64() }

func (e *Etcd) Faults() []FaultKind {
	kill := func(pick func(context.Context, *rand.Rand) (*sched, error)) func(context.Context, *rand.Rand) (func(context.Context) error, string, error) {
		return func(ctx context.Context, rng *rand.Rand) (func(context.Context) error, string, error) {
			s, err := pick(ctx, rng)
			if err != nil {
				return nil, "", err
			}
			s.p.kill()
			return e.restartAll([]*sched{s}), s.p.name, nil
		}
	}
	leader := func(ctx context.Context, _ *rand.Rand) (*sched, error) { return e.leader(ctx) }
	l := e.lease()
	return []FaultKind{
		{Name: "kill-leader", MinHold: time.Second, MaxHold: 4 * time.Second, Inject: kill(leader)},
		{Name: "kill-standby", MinHold: time.Second, MaxHold: 4 * time.Second, Inject: kill(e.standby)},
		{Name: "pause-leader", MinHold: l + time.Second, MaxHold: l + 4*time.Second, Inject: pauseLeader(e.leader)},
		{Name: "leader-cut-from-peers", MinHold: l + time.Second, MaxHold: l + 6*time.Second, Inject: func(ctx context.Context, _ *rand.Rand) (func(context.Context) error, string, error) {
			s, err := e.leader(ctx)
			if err != nil {
				return nil, "", err
			}
			e.isolate(s)
			return func(context.Context) error { e.isolate(nil); return nil }, s.p.name, nil
		}},
		{Name: "leader-cut-from-agents", MinHold: 2 * time.Second, MaxHold: 8 * time.Second, Inject: func(ctx context.Context, _ *rand.Rand) (func(context.Context) error, string, error) {
			s, err := e.leader(ctx)
			if err != nil {
				return nil, "", err
			}
			s.mesos.set(true, 0)
			return func(context.Context) error { s.mesos.set(false, 0); return nil }, s.p.name, nil
		}},
		{Name: "leader-peers-loss", MinHold: 2 * time.Second, MaxHold: 10 * time.Second, Inject: func(ctx context.Context, rng *rand.Rand) (func(context.Context) error, string, error) {
			s, err := e.leader(ctx)
			if err != nil {
				return nil, "", err
			}
			loss := drawLoss(rng)
			e.lossy(s, loss)
			return func(context.Context) error { e.lossy(nil, 0); return nil }, fmt.Sprintf("%s %.0f%%", s.p.name, 100*loss), nil
		}},
		{Name: "leader-agents-loss", MinHold: 2 * time.Second, MaxHold: 10 * time.Second, Inject: func(ctx context.Context, rng *rand.Rand) (func(context.Context) error, string, error) {
			s, err := e.leader(ctx)
			if err != nil {
				return nil, "", err
			}
			loss := drawLoss(rng)
			s.mesos.setLoss(loss)
			return func(context.Context) error { s.mesos.setLoss(0); return nil }, fmt.Sprintf("%s %.0f%%", s.p.name, 100*loss), nil
		}},
		{Name: "etcd-quorum-lost", MinHold: 3 * time.Second, MaxHold: 10 * time.Second, Inject: func(ctx context.Context, rng *rand.Rand) (func(context.Context) error, string, error) {
			var ss []*sched
			var names []string
			for _, i := range rng.Perm(3)[:2] {
				s := e.scheds[i]
				s.p.kill()
				ss, names = append(ss, s), append(names, s.p.name)
			}
			return e.restartAll(ss), strings.Join(names, ","), nil
		}},
		{Name: "agents-killed", MinHold: time.Second, MaxHold: 3 * time.Second, Inject: func(ctx context.Context, _ *rand.Rand) (func(context.Context) error, string, error) {
			e.mesos.kill()
			return func(ctx context.Context) error { return e.mesos.start() }, "mesos-local", nil
		}},
	}
}

func (e *Etcd) Heal(ctx context.Context) error {
	e.isolate(nil)
	e.lossy(nil, 0)
	for _, s := range e.scheds {
		_ = s.p.signal(syscall.SIGCONT)
		s.mesos.set(false, 0)
	}
	errs := []error{e.restartAll(e.scheds)(ctx)}
	if e.mesos != nil && !e.mesos.running() {
		errs = append(errs, e.mesos.start())
	}
	return errors.Join(errs...)
}

func (e *Etcd) Stop() error {
	for _, s := range e.scheds {
		s.p.stop(10 * time.Second)
		s.mesos.close()
	}
	for _, p := range e.peers {
		p.close()
	}
	if e.mesos != nil {
		e.mesos.stop(10 * time.Second)
	}
	return nil
}
