package detector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// DefaultSessionTimeout is Mesos' MASTER_DETECTOR_ZK_SESSION_TIMEOUT.
const DefaultSessionTimeout = 10 * time.Second

// Options tune a Detector. Zero fields take the defaults.
type Options struct {
	SessionTimeout time.Duration // default 10s
	Scheme         string        // of the leader's URL: "http" (default) or "https"
	Logger         *slog.Logger
	// RetryMin and RetryMax bound the jittered wait after a failed ZooKeeper read (default 100ms..5s).
	RetryMin, RetryMax time.Duration
}

// Detector follows the leading master of one ZooKeeper group. It implements mesos.Detector.
type Detector struct {
	url    URL
	opts   Options
	log    *slog.Logger
	conn   *zk.Conn
	cancel context.CancelFunc
	done   chan struct{}
	close  sync.Once

	mu      sync.Mutex
	leader  *Master       // nil: no leader known
	moved   chan struct{} // closed (and replaced) when the leader changes
	changes int           // leader changes seen, for tests and logs
}

// New connects to the URL's ZooKeeper ensemble and starts watching its masters. The connection
// is made in the background (as ZooKeeper clients do): Leader blocks until a leader is known.
// Close releases it.
func New(u URL, o Options) (*Detector, error) {
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.Scheme == "" {
		o.Scheme = "http"
	}
	if o.RetryMin <= 0 {
		o.RetryMin = 100 * time.Millisecond
	}
	if o.RetryMax < o.RetryMin {
		o.RetryMax = max(5*time.Second, o.RetryMin)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	log := o.Logger.With("subsystem", "mesos-detector", "zk", u.String())
	conn, _, err := zk.Connect(u.Servers, o.SessionTimeout, zk.WithLogger(zkLogger{log}), zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("mesos detector: connect %s: %w", u, err)
	}
	if u.Digest != "" {
		if err := conn.AddAuth("digest", []byte(u.Digest)); err != nil {
			conn.Close()
			return nil, fmt.Errorf("mesos detector: digest auth on %s: %w", u, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &Detector{url: u, opts: o, log: log, conn: conn, cancel: cancel, done: make(chan struct{}), moved: make(chan struct{})}
	go d.run(ctx)
	return d, nil
}

// Close stops watching and closes the ZooKeeper session. Leader calls in progress return an error.
func (d *Detector) Close() {
	d.close.Do(func() {
		d.cancel()
		d.conn.Close()
	})
	<-d.done
}

// String names the detector (the URL without its password).
func (d *Detector) String() string { return d.url.String() }

// Leader blocks until a leading master is known and returns its base URL and a channel that is
// closed when leadership moves away from it. While it waits it logs a warning every session
// timeout, with the ZooKeeper connection's state, so a wrong URL or an unreachable ensemble
// does not go unnoticed.
func (d *Detector) Leader(ctx context.Context) (string, <-chan struct{}, error) {
	var tick <-chan time.Time
	for {
		d.mu.Lock()
		leader, moved := d.leader, d.moved
		d.mu.Unlock()
		if leader != nil {
			return leader.URL, moved, nil
		}
		if tick == nil {
			t := time.NewTicker(d.opts.SessionTimeout)
			defer t.Stop()
			tick = t.C
		}
		select {
		case <-ctx.Done():
			return "", nil, fmt.Errorf("detect the leading master in %s: %w", d.url, ctx.Err())
		case <-d.done:
			return "", nil, fmt.Errorf("detect the leading master in %s: detector closed", d.url)
		case <-tick:
			d.log.Warn("still no leading Mesos master in ZooKeeper", "path", d.url.Path, "zk_state", d.conn.State().String())
		case <-moved:
		}
	}
}

// Current returns the leading master, if one is known.
func (d *Detector) Current() (Master, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.leader == nil {
		return Master{}, false
	}
	return *d.leader, true
}

// set installs the leader (nil: none) and wakes everyone waiting on a change, if it changed.
func (d *Detector) set(m *Master) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if sameMaster(d.leader, m) {
		return
	}
	d.leader = m
	d.changes++
	close(d.moved)
	d.moved = make(chan struct{})
	if m == nil {
		d.log.Warn("no leading Mesos master in ZooKeeper")
		return
	}
	d.log.Info("detected a new leading Mesos master", "master", m.URL, "znode", m.Node, "master_id", m.ID, "version", m.Version)
}

func sameMaster(a, b *Master) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Node == b.Node && a.URL == b.URL
}

// run watches the group until ctx ends.
func (d *Detector) run(ctx context.Context) {
	defer close(d.done)
	failures := 0
	for ctx.Err() == nil {
		watch, err := d.detect()
		if err != nil {
			if ctx.Err() != nil { // closed
				return
			}
			wait := d.retry(failures)
			failures++
			d.log.Warn("reading the Mesos masters from ZooKeeper failed; keeping the last known leader", "err", err, "retry_in", wait)
			if !sleep(ctx, wait) {
				return
			}
			continue
		}
		failures = 0
		select {
		case <-ctx.Done():
			return
		case <-watch:
		}
	}
}

// detect reads the group once, installs its leader and returns the watch that fires on the next
// change of the group.
func (d *Detector) detect() (<-chan zk.Event, error) {
	for {
		children, _, watch, err := d.conn.ChildrenW(d.url.Path)
		if errors.Is(err, zk.ErrNoNode) {
			exists, _, ewatch, err := d.conn.ExistsW(d.url.Path)
			if err != nil {
				return nil, fmt.Errorf("watch %s: %w", d.url.Path, err)
			}
			if exists {
				continue // created in between: list it
			}
			d.set(nil)
			return ewatch, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", d.url.Path, err)
		}
		m, ok := lowest(children)
		if !ok {
			d.set(nil)
			return watch, nil
		}
		data, _, err := d.conn.Get(path.Join(d.url.Path, m.node))
		if errors.Is(err, zk.ErrNoNode) {
			continue // the leader left before its data was read: list again
		}
		if err != nil {
			return nil, fmt.Errorf("read %s/%s: %w", d.url.Path, m.node, err)
		}
		master, err := decodeMaster(m, data, d.opts.Scheme)
		if err != nil {
			// Mesos' detector stops on such data; here the bad leader is not used and the
			// group is watched on, so a fixed master (a new znode) is picked up.
			d.log.Error("the leading master's znode cannot be read; waiting for the group to change", "err", err)
			d.set(nil)
			return watch, nil
		}
		d.set(&master)
		return watch, nil
	}
}

// retry is a jittered delay in [r/2, r], r doubling from RetryMin up to RetryMax.
func (d *Detector) retry(failures int) time.Duration {
	r := d.opts.RetryMin << min(failures, 20)
	if r <= 0 || r > d.opts.RetryMax {
		r = d.opts.RetryMax
	}
	return r/2 + rand.N(r/2+1)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) { z.l.Debug(fmt.Sprintf(format, args...)) }
