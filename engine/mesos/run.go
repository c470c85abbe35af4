package mesos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	mclient "github.com/mesos/mesos-go/api/v1/lib/client"
	"github.com/mesos/mesos-go/api/v1/lib/httpcli"
	"github.com/mesos/mesos-go/api/v1/lib/httpcli/apierrors"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler/calls"

	"github.com/ejcloud/elasticjob/engine"
)

const (
	maxRedirects = 4
	// initialHeartbeat bounds the wait for SUBSCRIBED (Mesos' default heartbeat is 15 s).
	initialHeartbeat = 15 * time.Second
)

// Run subscribes and dispatches events to h until ctx ends. When the stream is lost (error,
// EOF, missed heartbeats, ERROR event, a leader change seen by the detector) it re-subscribes
// with jittered exponential backoff using the current framework id; a SUBSCRIBE refused for
// its credentials (401, 403) is retried every BackoffMax. It returns nil when ctx ends, and an
// error only for an invalid Config. Run must not be called concurrently on one Client.
func (c *Client) Run(ctx context.Context, h engine.Handler) error {
	if s, ok := c.cfg.Detector.(static); ok {
		if _, err := masterEndpoint(string(s)); err != nil {
			return err
		}
	}
	defer c.hc.CloseIdleConnections()
	attempt := 0
	for {
		subscribed, moved, err := c.runStream(ctx, h)
		if ctx.Err() != nil {
			return nil
		}
		if subscribed {
			attempt = 0
		}
		wait := c.backoff(attempt)
		attempt++
		switch {
		case errors.Is(err, ErrRefused):
			wait = c.cfg.BackoffMax
			c.log.Error("the master refused the subscription; check the framework's principal and secret (mesos_principal, mesos_secret)",
				"err", err, "master", c.Master(), "retry_in", wait)
		case errors.Is(err, ErrLeaderMoved):
			wait = c.backoff(0)
			c.log.Warn("leading master changed, subscribing to the new leader", "previous", c.Master(), "backoff", wait)
		default:
			c.log.Warn("subscription lost, re-subscribing",
				"err", err, "framework_id", c.FrameworkID(), "master", c.Master(), "backoff", wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		case <-moved: // a new leader: no reason to wait for the old one
			t.Stop()
		}
	}
}

// masterEndpoint is the scheduler API endpoint of a master base URL.
func masterEndpoint(base string) (*url.URL, error) {
	u, err := url.ParseRequestURI(strings.TrimRight(base, "/") + schedulerPath)
	if err != nil || base == "" || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("mesos: invalid master URL %q", base)
	}
	return u, nil
}

// backoff returns a jittered delay in [d/2, d] where d doubles from BackoffMin up to BackoffMax.
func (c *Client) backoff(attempt int) time.Duration {
	d := c.cfg.BackoffMin << min(attempt, 32)
	if d <= 0 || d > c.cfg.BackoffMax {
		d = c.cfg.BackoffMax
	}
	return d/2 + rand.N(d/2+1)
}

// runStream runs one subscription until it ends. subscribed reports whether SUBSCRIBED arrived;
// moved is the detector's channel for the master it used (closed when leadership moves).
func (c *Client) runStream(ctx context.Context, h engine.Handler) (subscribed bool, moved <-chan struct{}, err error) {
	base, moved, err := c.cfg.Detector.Leader(ctx)
	if err != nil {
		return false, nil, fmt.Errorf("detect the leading master: %w", err)
	}
	endpoint, err := masterEndpoint(base)
	if err != nil {
		return false, moved, err
	}
	c.setMaster(endpoint)
	streamCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() { // a leader change ends the stream
		select {
		case <-moved:
			cancel(ErrLeaderMoved)
		case <-streamCtx.Done():
		}
	}()
	defer func() {
		if cause := context.Cause(streamCtx); errors.Is(cause, ErrLeaderMoved) && ctx.Err() == nil {
			err = fmt.Errorf("%w (stream to %s: %v)", ErrLeaderMoved, c.Master(), err)
		}
	}()
	resp, sess, err := c.openStream(streamCtx, endpoint)
	if err != nil {
		return false, moved, err
	}
	sess.cancel = func() { cancel(nil) }
	defer resp.Close()

	s := &stream{c: c, h: h, sess: sess, wd: newWatchdog(sess.cancel, c.cfg.HeartbeatGrace),
		acks: make(chan ackReq, 4096), done: make(chan struct{})}
	defer s.wd.stop()
	defer close(s.done)
	for range ackWorkers {
		go s.runAcks(streamCtx)
	}
	defer func() {
		if s.subscribed {
			c.setSession(nil, "")
			h.Disconnected(ctx, err)
		}
	}()
	for {
		var ev event
		if err := resp.Decode(&ev); err != nil {
			return s.subscribed, moved, s.wd.explain(fmt.Errorf("read event stream: %w", err))
		}
		s.wd.kick()
		if err := s.handle(ctx, &ev); err != nil {
			return s.subscribed, moved, err
		}
	}
}

// openStream sends SUBSCRIBE to endpoint, following redirects to the leading master, and
// returns the open event stream with its session (stream id and endpoint).
func (c *Client) openStream(ctx context.Context, endpoint *url.URL) (mesos.Response, *session, error) {
	for redirects := 0; ; redirects++ {
		call := calls.Subscribe(c.frameworkInfo(c.FrameworkID()))
		// ResponseClassAuto, as a real master answers SUBSCRIBE with the Content-Type of the
		// codec (application/json) and a chunked RecordIO body, not application/recordio.
		cli := c.httpFor(endpoint)
		resp, err := cli.Send(mclient.RequestSingleton(call), mclient.ResponseClassAuto,
			httpcli.Context(ctx), httpcli.Close(true), withURL(endpoint))
		if err == nil {
			id := header(resp, headerStreamID)
			if id == "" {
				resp.Close()
				return nil, nil, httpcli.ProtocolError("SUBSCRIBE response without " + headerStreamID)
			}
			return resp, &session{streamID: id, endpoint: endpoint, http: cli}, nil
		}
		location := header(resp, "Location")
		if resp != nil {
			resp.Close()
		}
		if refused := refusal(err, endpoint); refused != nil {
			return nil, nil, refused
		}
		if !isRedirect(err) || redirects >= maxRedirects {
			return nil, nil, fmt.Errorf("subscribe to %s: %w", endpoint.Host, err)
		}
		if endpoint, err = leaderURL(location, endpoint); err != nil {
			return nil, nil, fmt.Errorf("subscribe: %w", err)
		}
		c.setMaster(endpoint)
		c.log.Info("following redirect to the leading master", "endpoint", endpoint.String())
	}
}

// refusal turns a 401 or 403 answer to SUBSCRIBE into an ErrRefused error that says why.
func refusal(err error, endpoint *url.URL) error {
	switch {
	case apierrors.CodeNotAuthenticated.Matches(err):
		return fmt.Errorf("%w: subscribe to %s: 401 Unauthorized: the master did not accept the framework's credentials (%v)",
			ErrRefused, endpoint.Host, err)
	case apierrors.CodeUnsubscribed.Matches(err):
		return fmt.Errorf("%w: subscribe to %s: 403 Forbidden: the principal may not register this framework (%v)",
			ErrRefused, endpoint.Host, err)
	}
	return nil
}

func header(resp mesos.Response, key string) string {
	if r, ok := resp.(*httpcli.Response); ok && r != nil {
		return r.Header.Get(key)
	}
	return ""
}

// frameworkInfo builds the FrameworkInfo sent with SUBSCRIBE.
func (c *Client) frameworkInfo(id string) *mesos.FrameworkInfo {
	cfg := c.cfg
	fi := &mesos.FrameworkInfo{
		User:            cfg.User,
		Name:            cfg.FrameworkName,
		Role:            &cfg.Role,
		FailoverTimeout: ptr(cfg.FailoverTimeout.Seconds()),
		Checkpoint:      ptr(!cfg.NoCheckpoint),
		Capabilities: []mesos.FrameworkInfo_Capability{
			{Type: mesos.FrameworkInfo_Capability_PARTITION_AWARE},
		},
	}
	if cfg.Hostname != "" {
		fi.Hostname = &cfg.Hostname
	}
	if cfg.Principal != "" {
		fi.Principal = &cfg.Principal
	}
	if id != "" {
		fi.ID = &mesos.FrameworkID{Value: id}
	}
	return fi
}

func ptr[T any](v T) *T { return &v }

// watchdog cancels the stream when no event arrives for (grace+1) heartbeat intervals.
// Before SUBSCRIBED announces the interval, Mesos' default of 15 s is assumed.
type watchdog struct {
	grace  int
	cancel context.CancelFunc
	limit  atomic.Int64 // nanoseconds
	fired  atomic.Bool
	timer  *time.Timer
}

func newWatchdog(cancel context.CancelFunc, grace int) *watchdog {
	w := &watchdog{grace: grace, cancel: cancel}
	w.limit.Store(int64(time.Duration(grace+1) * initialHeartbeat))
	w.timer = time.AfterFunc(w.current(), w.fire)
	return w
}

func (w *watchdog) current() time.Duration { return time.Duration(w.limit.Load()) }

func (w *watchdog) fire() {
	w.fired.Store(true)
	w.cancel()
}

// setInterval applies the heartbeat interval announced in SUBSCRIBED.
func (w *watchdog) setInterval(seconds float64) {
	if seconds > 0 {
		w.limit.Store(int64(float64(w.grace+1) * seconds * float64(time.Second)))
		w.kick()
	}
}

func (w *watchdog) kick() { w.timer.Reset(w.current()) }
func (w *watchdog) stop() { w.timer.Stop() }

// explain marks a stream error caused by the watchdog as a heartbeat timeout.
func (w *watchdog) explain(err error) error {
	if w.fired.Load() {
		return fmt.Errorf("%w: no event for %s: %w", ErrHeartbeat, w.current(), err)
	}
	return err
}
