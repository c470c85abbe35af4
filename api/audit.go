package api

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/history/view"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/gin-gonic/gin"
)

// AuditLog keeps the audit log: one row per write request to /api, the
// refused ones too (implemented over the event trace writer, whose spool
// makes a row durable without the database, and the history store).
type AuditLog interface {
	// Record queues a row and waits, within ctx, until it is durable on
	// local disk; it never waits for the database. The API logs an error
	// and answers the request anyway.
	Record(ctx context.Context, a view.Audit) error
	// Audits searches the log, as the history searches do.
	Audits(ctx context.Context, q view.Query) (view.Page[view.Audit], error)
}

// Gin context keys the audit middleware reads.
const (
	ctxUser    = "ej.user"    // authenticated user, or the user name a login tried
	ctxRole    = "role"       // Role, set by the auth middleware and login
	ctxError   = "ej.error"   // the message writeError answered
	ctxNoAudit = "ej.noAudit" // SkipAudit was called
)

// auditWait bounds how long a write waits for its audit row to reach the
// spool on disk (an fsync shared with concurrent writes).
const auditWait = 5 * time.Second

// auditBodyLimit is how much of a request body the summary looks at.
const auditBodyLimit = 64 << 10

// SkipAudit marks a request as not to be recorded by this instance: a
// standby that forwards a write to the leader calls it, so the write is
// recorded once, by the leader that executes it.
func SkipAudit(c *gin.Context) { c.Set(ctxNoAudit, true) }

// RemoteAddr is the default Options.Forwarding.ClientAddr: the host of the TCP peer
// (never a header a client could forge).
func RemoteAddr(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// auditMiddleware records every write request (any method but GET, HEAD
// and OPTIONS) on a matched /api route, after the rest of the chain: auth
// refusals (401, 403) included, a panic recorded as 500.
func (s *Server) auditMiddleware(c *gin.Context) {
	if s.audit == nil || isRead(c.Request.Method) {
		c.Next()
		return
	}
	body := &bodyTap{r: c.Request.Body, limit: auditBodyLimit}
	if c.Request.Body != nil && c.Request.Body != http.NoBody {
		c.Request.Body = body
	}
	panicked := true
	defer func() {
		if _, skip := c.Get(ctxNoAudit); !skip {
			status := c.Writer.Status()
			if panicked {
				status = http.StatusInternalServerError
			}
			s.recordAudit(c, body, status)
		}
	}()
	c.Next()
	panicked = false
}

func (s *Server) recordAudit(c *gin.Context, body *bodyTap, status int) {
	body.drain()
	user, role := c.GetString(ctxUser), ""
	if r, ok := c.Get(ctxRole); ok {
		role = fmt.Sprint(r)
	}
	if user == "" {
		user = "anonymous"
	}
	route := c.FullPath()
	kind, target := auditTarget(c, route, body.bytes())
	var summary string
	switch route {
	case "/api/login":
		summary = loginOutcome(status, role)
	case "/api/logout":
		summary = "logout"
	case "/api/operate/store/restore":
		summary = "restore of the whole registry from a backup" // its nodes are no summary
	default:
		summary = changeSummary(body.bytes(), body.truncated, status, c.GetString(ctxError), target)
	}
	now := s.clock.Now()
	ns := c.GetString(ctxNamespace)
	if ns == "" { // not resolved (refused before, or a login): as the request named it, if it names a valid one
		ns, _ = namespaceOf(c)
	}
	a := view.Audit{CreationTime: &now, User: user, Role: role, Address: s.addressOf(c), Method: c.Request.Method, Route: route,
		TargetKind: kind, Target: target, Summary: summary, Status: status, Namespace: cmp.Or(ns, namespace.Default)}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), auditWait)
	defer cancel()
	if err := s.audit.Record(ctx, a); err != nil {
		s.log.Warn("api: audit row not confirmed on disk", "method", a.Method, "route", route, "status", status, "err", err)
	}
}

// loginOutcome says how a login ended, in fixed words (never the body).
func loginOutcome(status int, role string) string {
	switch status {
	case http.StatusOK:
		return "login succeeded as " + role
	case http.StatusUnauthorized:
		return "login refused: wrong user name or password"
	case http.StatusTooManyRequests:
		return "login refused: too many failed logins from this address"
	}
	return fmt.Sprintf("login refused: %d %s", status, http.StatusText(status))
}

// bodyTap copies what the handler reads of a request body, up to limit.
type bodyTap struct {
	r         io.ReadCloser
	limit     int
	buf       []byte
	truncated bool
	eof       bool
}

func (b *bodyTap) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.keep(p[:n])
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *bodyTap) Close() error { return b.r.Close() }

func (b *bodyTap) keep(p []byte) {
	room := b.limit - len(b.buf)
	if len(p) > room {
		p, b.truncated = p[:max(room, 0)], true
	}
	b.buf = append(b.buf, p...)
}

// drain reads what the handler left unread (a refused request's body),
// up to the limit, so the summary can name the target.
func (b *bodyTap) drain() {
	if b.r == nil || b.eof || b.truncated {
		return
	}
	chunk := make([]byte, 4096)
	for !b.eof && !b.truncated {
		if _, err := b.Read(chunk); err != nil {
			return
		}
	}
}

func (b *bodyTap) bytes() []byte { return b.buf }

// searchAudit answers GET /api/audit: the history searches' paging,
// sorting, time range and filters (user, role, address, method, route,
// targetKind, target, status). The admin reads every namespace's rows
// (?namespace=NAME: that one's); an editor reads the namespaces it edits
// (?namespace=NAME: that one, if it edits it).
func (s *Server) searchAudit(c *gin.Context) {
	q, err := searchQuery(c.Request.URL.Query())
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	p := principal(c)
	switch {
	case c.Query("namespace") != "":
		q.Namespaces = []string{nsOf(c)} // authorize checked the caller edits it
	case !p.Admin:
		q.Namespaces = p.WithRole(true)
	}
	if s.audit == nil {
		writeError(c, s.log, fmt.Errorf("%w: the audit log is off: it is kept in the history database (event_trace_rdb_driver is none)", ErrUnavailable))
		return
	}
	page, err := s.audit.Audits(c, q)
	if err != nil {
		writeError(c, s.log, queryError(err))
		return
	}
	c.JSON(http.StatusOK, page)
}

// routeKind is the kind of thing a route writes: the segment after /api/
// (app, job, workflow, …; jobs for the practice guide's aliases), "" for
// the others.
func routeKind(route string) string {
	seg, _, _ := strings.Cut(strings.TrimPrefix(route, "/api/"), "/")
	switch seg {
	case "app", "job", "workflow":
		return seg
	case "jobs":
		return "job"
	}
	return ""
}
