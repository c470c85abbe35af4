package api

import (
	"context"
	"crypto/hmac"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/store/cache"
	"github.com/gin-gonic/gin"
)

// Cluster is what the API needs of leader election. Only the leader serves
// writes; any other instance forwards them to it (one hop).
type Cluster interface {
	// Leading reports whether this instance is the leader now.
	Leading() bool
	// LeaderURL is the base URL of the leader's API, when one is known.
	LeaderURL() (string, bool)
	// SelfID names this instance (in forwarded requests).
	SelfID() string
}

// Headers between instances.
const (
	// HeaderForwarded marks a request a standby forwarded: "<instance id>
	// <unix seconds> <hex HMAC>". The leader serves it itself or answers
	// 503, never forwards it again.
	HeaderForwarded = "X-Elasticjob-Forwarded"
	// HeaderForwardedFor carries the client's address of a forwarded
	// request (trusted only with a valid HeaderForwarded).
	HeaderForwardedFor = "X-Elasticjob-Forwarded-For"
	// HeaderChanged lists, in the leader's answer to a forwarded request,
	// the registry paths the request wrote ("*": too many to list), so
	// the standby refreshes its copy before answering: the client reads
	// its own write from any instance.
	HeaderChanged = "X-Elasticjob-Changed"
	// HeaderServedBy names the instance that served a request.
	HeaderServedBy = "X-Elasticjob-Served-By"
)

// forwardSkew bounds the age of a forwarded request's signature.
const forwardSkew = 2 * time.Minute

// isWrite reports whether a request changes state (and so goes to the
// leader). Logging in changes nothing shared: any instance serves it.
func isWrite(c *gin.Context) bool {
	return !isRead(c.Request.Method) && c.FullPath() != "/api/login"
}

// toLeader reports whether the leader serves a request: every write, and
// the reads of what only the leader keeps in memory (a namespace's usage
// series, the clusters' connections).
func toLeader(c *gin.Context) bool {
	return isWrite(c) || c.FullPath() == usageRoute || c.FullPath() == clustersRoute
}

// noLeaderKey marks a leader's read a standby serves itself, no leader being known
// (clustersRoute: the answer says what it cannot know).
const noLeaderKey = "noLeader"

// forward sends writes (and the leader's reads) that reach a standby to
// the leader, and on the leader prepares the answer to a forwarded one.
func (s *Server) forward(c *gin.Context) {
	if s.cluster == nil || !toLeader(c) {
		c.Next()
		return
	}
	if h := c.GetHeader(HeaderForwarded); h != "" {
		s.serveForwarded(c, h)
		return
	}
	if s.cluster.Leading() {
		c.Next()
		return
	}
	leader, ok := s.cluster.LeaderURL()
	if !ok && c.FullPath() == clustersRoute {
		// The clusters' list is mostly the registry's and the engines': a standby
		// answers it, saying the connections are not known here.
		c.Set(noLeaderKey, true)
		c.Next()
		return
	}
	if !ok {
		c.Header("Retry-After", "1")
		writeError(c, s.log, fmt.Errorf("%w: no scheduler is the leader at the moment (an election is under way); retry shortly", ErrUnavailable))
		return
	}
	SkipAudit(c) // the leader records the write it serves
	s.proxy(c, leader)
}

// serveForwarded serves a write a standby forwarded; a leader no longer
// leading answers 503 rather than forwarding it a second time.
func (s *Server) serveForwarded(c *gin.Context, header string) {
	if from, ok := s.verifyForward(header, c.Request); ok {
		c.Set(forwardedFromKey, from)
	}
	if !s.cluster.Leading() {
		c.Header("Retry-After", "1")
		writeError(c, s.log, fmt.Errorf("%w: this scheduler is no longer the leader; retry", ErrUnavailable))
		return
	}
	ctx, col := cache.Collect(c.Request.Context())
	c.Request = c.Request.WithContext(ctx)
	c.Writer = &changedWriter{ResponseWriter: c.Writer, col: col}
	c.Next()
}

const forwardedFromKey = "forwardedFrom"

// addressOf is the address of the client that made a request: the one a
// verified standby forwarded it for, else Options.Forwarding.ClientAddr's.
func (s *Server) addressOf(c *gin.Context) string {
	if _, ok := c.Get(forwardedFromKey); ok {
		if a := c.GetHeader(HeaderForwardedFor); a != "" {
			return a
		}
	}
	return s.clientAddr(c.Request)
}

// changedWriter adds HeaderChanged when the answer's header is written
// (the handler's commits are done by then).
type changedWriter struct {
	gin.ResponseWriter
	col  *cache.Collector
	done bool
}

func (w *changedWriter) WriteHeader(code int) {
	if !w.done {
		w.done = true
		paths, overflow := w.col.Paths()
		switch {
		case overflow:
			w.Header().Set(HeaderChanged, "*")
		case len(paths) > 0:
			w.Header().Set(HeaderChanged, strings.Join(paths, ","))
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *changedWriter) WriteHeaderNow() {
	if !w.Written() {
		w.WriteHeader(w.Status())
	}
	w.ResponseWriter.WriteHeaderNow()
}

func (w *changedWriter) Write(b []byte) (int, error) {
	w.WriteHeaderNow()
	return w.ResponseWriter.Write(b)
}

func (w *changedWriter) WriteString(str string) (int, error) {
	w.WriteHeaderNow()
	return w.ResponseWriter.WriteString(str)
}

// proxy forwards the request to the leader and relays its answer, after
// refreshing this instance's copy of what the write changed.
func (s *Server) proxy(c *gin.Context, leader string) {
	target, err := url.Parse(leader)
	if err != nil {
		writeError(c, s.log, fmt.Errorf("%w: the leader's address %q: %v", ErrUnavailable, leader, err))
		return
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.URL.Path, r.Out.URL.RawPath = c.Request.URL.Path, c.Request.URL.RawPath
			r.Out.Header.Set(HeaderForwarded, s.signForward(r.Out))
			r.Out.Header.Set(HeaderForwardedFor, s.clientAddr(c.Request))
		},
		Transport: s.peerHTTP,
		ModifyResponse: func(resp *http.Response) error {
			if changed := resp.Header.Get(HeaderChanged); changed != "" && s.refresh != nil {
				paths, all := strings.Split(changed, ","), changed == "*"
				// Not cut short by a client that left, but bounded: a store
				// without a quorum answers no read (the watch brings the
				// change later).
				ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), forwardRefreshBound)
				defer cancel()
				if err := s.refresh(ctx, paths, all); err != nil {
					s.log.Warn("api: refresh after a forwarded write", "err", err)
				}
			}
			resp.Header.Del(HeaderChanged)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			c.Header("Retry-After", "1")
			if errors.Is(err, context.Canceled) {
				return
			}
			writeError(c, s.log, fmt.Errorf("%w: the leader at %s did not answer (%v); retry shortly", ErrUnavailable, leader, err))
		},
	}
	if c.FullPath() == "/api/app/:appName/package" && c.Request.Body != nil {
		c.Request.Body = newUploadBody(c) // a large upload streams through while data arrives
	}
	rp.ServeHTTP(plainWriter{c.Writer}, c.Request)
	c.Abort()
}

// plainWriter hides the optional interfaces of gin's writer from the
// reverse proxy (its CloseNotify panics on writers that lack one; the
// request's context already ends with the client).
type plainWriter struct{ http.ResponseWriter }

// Unwrap lets http.ResponseController flush through to the connection.
func (w plainWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// signForward signs a forwarded request with the key every instance with
// the same credentials shares.
func (s *Server) signForward(r *http.Request) string {
	id, ts := s.cluster.SelfID(), strconv.FormatInt(s.clock.Now().Unix(), 10)
	return id + " " + ts + " " + hex.EncodeToString(s.auth.mac(forwardSubject(id, ts, r)))
}

func forwardSubject(id, ts string, r *http.Request) string {
	return "forward\x00" + id + "\x00" + ts + "\x00" + r.Method + "\x00" + r.URL.Path
}

// verifyForward checks a forwarded request's signature and age.
func (s *Server) verifyForward(header string, r *http.Request) (string, bool) {
	f := strings.Fields(header)
	if len(f) != 3 {
		return "", false
	}
	sig, err := hex.DecodeString(f[2])
	if err != nil || !hmac.Equal(sig, s.auth.mac(forwardSubject(f[0], f[1], r))) {
		return "", false
	}
	sec, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return "", false
	}
	age := s.clock.Now().Sub(time.Unix(sec, 0))
	if age > forwardSkew || age < -forwardSkew {
		return "", false
	}
	return f[0], true
}

// forwardRefreshBound bounds the re-read of what a write forwarded to the
// leader changed (the leader's answer names the paths).
const forwardRefreshBound = 3 * time.Second
