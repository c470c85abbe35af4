package mesos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	mclient "github.com/mesos/mesos-go/api/v1/lib/client"
	"github.com/mesos/mesos-go/api/v1/lib/httpcli"
	"github.com/mesos/mesos-go/api/v1/lib/httpcli/apierrors"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"

	"github.com/ejcloud/elasticjob/engine/mesos/inproc"
	"github.com/ejcloud/elasticjob/internal/mesosframe"
)

const headerStreamID = "Mesos-Stream-Id"

// Client is a Mesos v1 scheduler HTTP API client. Run keeps a subscription alive; the call
// methods may be used from any goroutine while it is live.
type Client struct {
	cfg  Config
	log  *slog.Logger
	http *httpcli.Client // JSON, for a master in another process
	// inproc speaks protobuf to a master in this process (the embedded
	// engine): both ends are this binary's mesos-go types, so nothing
	// newer than the protos can arrive (what the JSON event decoder
	// tolerates), and protobuf costs a fraction of JSON's encoding and
	// decoding of every call and event, each LAUNCH's task data included.
	inproc *httpcli.Client
	hc     *http.Client

	mu          sync.Mutex
	master      string // base URL of the master last subscribed to or detected
	frameworkID string
	sess        *session                                  // nil while not subscribed
	offers      map[string]*mesos.Offer                   // raw offers held until used, rescinded or voided
	execs       map[string]map[string]*mesos.ExecutorInfo // agent → executor id → a running executor's ExecutorInfo (executors.go)
	joined      map[string]map[string]bool                // agent → executor id: tasks joined it with its ExecutorInfo (logged once)
}

// session is one live subscription.
type session struct {
	streamID string
	endpoint *url.URL        // leader endpoint the stream was opened on (after redirects)
	http     *httpcli.Client // the codec the stream was opened with: every call of the session uses it
	cancel   func()          // tears the stream down
}

// New returns a Client for cfg with defaults applied. It does not connect; call Run.
func New(cfg Config) *Client {
	cfg = cfg.withDefaults()
	// A master in this process (the embedded engine) is called without a
	// socket (inproc): the same calls, codecs and credentials.
	var transport http.RoundTripper = inproc.Transport{Next: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		ResponseHeaderTimeout: 15 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		MaxIdleConnsPerHost:   ackWorkers + acceptsInFlight + 4, // the acknowledgement workers, a round's ACCEPTs, other calls from the loop, the stream
	}}
	if cfg.Secret != "" {
		transport = basicAuth{next: transport.(inproc.Transport), user: cfg.Principal, password: cfg.Secret}
	}
	endpoint := ""
	if s, ok := cfg.Detector.(static); ok {
		endpoint = string(s) + schedulerPath
	}
	hc := &http.Client{
		Transport: transport,
		// Redirects are handled by the client: a 307 from a non-leading master names the leader.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &Client{
		cfg:         cfg,
		log:         cfg.Logger.With("subsystem", "mesos"),
		hc:          hc,
		frameworkID: cfg.FrameworkID,
		offers:      map[string]*mesos.Offer{},
		execs:       map[string]map[string]*mesos.ExecutorInfo{},
		http: httpcli.New(
			httpcli.Endpoint(endpoint),
			httpcli.Codec(mesosframe.JSONCodec), // mesos-go's JSON codec; a bad frame size is an error, not a panic
			httpcli.Do(hc.Do),
		),
		inproc: httpcli.New(httpcli.Endpoint(endpoint), httpcli.Codec(mesosframe.ProtobufCodec), httpcli.Do(hc.Do)),
	}
}

// httpFor is the client for a master at endpoint: protobuf when it is
// served in this process, JSON otherwise.
func (c *Client) httpFor(endpoint *url.URL) *httpcli.Client {
	if endpoint.Scheme == "http" && inproc.Serves(endpoint.Host) {
		return c.inproc
	}
	return c.http
}

// FrameworkID returns the current framework id ("" before the first subscription of a new framework).
func (c *Client) FrameworkID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.frameworkID
}

// Master returns the base URL of the master the client is subscribed to, or last tried
// ("" before the first attempt). With a detector it follows the leading master.
func (c *Client) Master() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.master
}

func (c *Client) setMaster(u *url.URL) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.master = u.Scheme + "://" + u.Host
}

// current returns the live session and framework id, or ErrNotSubscribed.
func (c *Client) current() (*session, string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess == nil {
		return nil, "", ErrNotSubscribed
	}
	return c.sess, c.frameworkID, nil
}

// call sends a non-SUBSCRIBE call on the live session. Mesos answers 202 Accepted.
func (c *Client) call(ctx context.Context, call *scheduler.Call) error {
	sess, fid, err := c.current()
	if err != nil {
		return fmt.Errorf("%s: %w", call.Type, err)
	}
	call.FrameworkID = &mesos.FrameworkID{Value: fid}
	resp, err := sess.http.Send(mclient.RequestSingleton(call), mclient.ResponseClassAuto,
		httpcli.Context(ctx),
		httpcli.Header(headerStreamID, sess.streamID),
		withURL(sess.endpoint))
	if resp != nil {
		resp.Close()
	}
	if err == nil {
		return nil
	}
	if apierrors.CodeUnsubscribed.Matches(err) || apierrors.CodeNotLeader.Matches(err) {
		// The master no longer knows this stream (or is no longer leading): start over.
		c.log.Warn("call rejected, dropping subscription", "call", call.Type.String(), "err", err)
		sess.cancel()
	}
	return fmt.Errorf("%s: %w", call.Type, err)
}

// withURL sends a request to u instead of the configured endpoint (nil: no change).
func withURL(u *url.URL) httpcli.RequestOpt {
	return func(r *http.Request) {
		if u != nil {
			r.URL = u
			r.Host = u.Host
		}
	}
}

// leaderURL resolves the Location header of a 307 against the current endpoint. Mesos sends
// "//host:port/..."; the scheme and path of the current endpoint are kept.
func leaderURL(location string, current *url.URL) (*url.URL, error) {
	loc, err := url.Parse(location)
	if err != nil || loc.Host == "" {
		return nil, fmt.Errorf("bad redirect location %q", location)
	}
	next := *current
	next.Host = loc.Host
	return &next, nil
}

// setSession installs a live subscription (nil clears it) and voids all held offers.
func (c *Client) setSession(s *session, frameworkID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sess = s
	if s != nil {
		c.frameworkID = frameworkID
	}
	clear(c.offers)
}

// resetFrameworkID forgets the framework id so the next subscription registers a new framework.
func (c *Client) resetFrameworkID() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frameworkID = ""
}

// basicAuth sends HTTP Basic credentials (principal and secret) with every request.
type basicAuth struct {
	next           inproc.Transport
	user, password string
}

func (b basicAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.SetBasicAuth(b.user, b.password)
	return b.next.RoundTrip(r)
}

func (b basicAuth) CloseIdleConnections() { b.next.CloseIdleConnections() }

// isRedirect reports whether err is a 307 from a non-leading master.
func isRedirect(err error) bool {
	var apiErr *apierrors.Error
	return errors.As(err, &apiErr) && apierrors.CodeNotLeader.Matches(apiErr)
}
