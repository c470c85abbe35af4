package mesos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sync/atomic"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	mclient "github.com/mesos/mesos-go/api/v1/lib/client"
	"github.com/mesos/mesos-go/api/v1/lib/httpcli"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler/calls"
)

const (
	maxRedirects = 4
	// initialHeartbeat bounds the wait for SUBSCRIBED (Mesos' default heartbeat is 15 s).
	initialHeartbeat = 15 * time.Second
)

// Run subscribes and dispatches events to h until ctx ends. When the stream is lost (error,
// EOF, missed heartbeats, ERROR event) it re-subscribes with jittered exponential backoff using the
// current framework id. It returns nil when ctx ends, and an error only for an invalid Config.
// Run must not be called concurrently on one Client.
func (c *Client) Run(ctx context.Context, h Handler) error {
	if _, err := url.ParseRequestURI(c.http.Endpoint()); err != nil || c.cfg.URL == "" {
		return fmt.Errorf("mesos: invalid master URL %q", c.cfg.URL)
	}
	defer c.hc.CloseIdleConnections()
	attempt := 0
	for {
		subscribed, err := c.runStream(ctx, h)
		if ctx.Err() != nil {
			return nil
		}
		if subscribed {
			attempt = 0
		}
		wait := c.backoff(attempt)
		attempt++
		c.log.Warn("subscription lost, re-subscribing",
			"err", err, "framework_id", c.FrameworkID(), "backoff", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// backoff returns a jittered delay in [d/2, d] where d doubles from BackoffMin up to BackoffMax.
func (c *Client) backoff(attempt int) time.Duration {
	d := c.cfg.BackoffMin << min(attempt, 32)
	if d <= 0 || d > c.cfg.BackoffMax {
		d = c.cfg.BackoffMax
	}
	return d/2 + rand.N(d/2+1)
}

// runStream runs one subscription until it ends. subscribed reports whether SUBSCRIBED arrived.
func (c *Client) runStream(ctx context.Context, h Handler) (subscribed bool, err error) {
	streamCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	resp, sess, err := c.openStream(streamCtx)
	if err != nil {
		return false, err
	}
	sess.cancel = cancel
	defer resp.Close()

	s := &stream{c: c, h: h, sess: sess, wd: newWatchdog(cancel, c.cfg.HeartbeatGrace)}
	defer s.wd.stop()
	defer func() {
		if s.subscribed {
			c.setSession(nil, "")
			h.Disconnected(ctx, err)
		}
	}()
	for {
		var ev event
		if err := resp.Decode(&ev); err != nil {
			return s.subscribed, s.wd.explain(fmt.Errorf("read event stream: %w", err))
		}
		s.wd.kick()
		if err := s.handle(ctx, &ev); err != nil {
			return s.subscribed, err
		}
	}
}

// openStream sends SUBSCRIBE, following redirects to the leading master, and returns the open
// event stream with its session (stream id and endpoint).
func (c *Client) openStream(ctx context.Context) (mesos.Response, *session, error) {
	var endpoint *url.URL // nil: the configured endpoint
	for redirects := 0; ; redirects++ {
		call := calls.Subscribe(c.frameworkInfo(c.FrameworkID()))
		// ResponseClassAuto, as a real master answers SUBSCRIBE with the Content-Type of the
		// codec (application/json) and a chunked RecordIO body, not application/recordio.
		resp, err := c.http.Send(mclient.RequestSingleton(call), mclient.ResponseClassAuto,
			httpcli.Context(ctx), httpcli.Close(true), withURL(endpoint))
		if err == nil {
			id := header(resp, headerStreamID)
			if id == "" {
				resp.Close()
				return nil, nil, httpcli.ProtocolError("SUBSCRIBE response without " + headerStreamID)
			}
			return resp, &session{streamID: id, endpoint: endpoint}, nil
		}
		location := header(resp, "Location")
		if resp != nil {
			resp.Close()
		}
		if !isRedirect(err) || redirects >= maxRedirects {
			return nil, nil, fmt.Errorf("subscribe: %w", err)
		}
		if endpoint == nil {
			endpoint, _ = url.Parse(c.http.Endpoint())
		}
		if endpoint, err = leaderURL(location, endpoint); err != nil {
			return nil, nil, fmt.Errorf("subscribe: %w", err)
		}
		c.log.Info("following redirect to the leading master", "endpoint", endpoint.String())
	}
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
		Checkpoint:      ptr(cfg.Checkpoint),
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
