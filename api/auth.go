package api

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/gin-gonic/gin"
)

// Role is what a caller may do.
type Role string

const (
	RoleAdmin Role = "admin" // read and write
	RoleGuest Role = "guest" // read only
)

// Credentials configure auth. With no admin user, every caller is admin
// (the scheduler only allows that when listening on loopback).
type Credentials struct {
	AdminUser, AdminPassword string
	GuestUser, GuestPassword string
	TokenTTL                 time.Duration
}

// Revocations remembers tokens that were logged out before they expired.
// The scheduler keeps them in the registry, so a token logged out on one
// instance is refused by every instance.
type Revocations interface {
	Revoked(ctx context.Context, id string) (bool, error)
	Revoke(ctx context.Context, id string, expires, now time.Time) error
}

// Auth checks Basic credentials and bearer tokens issued by /api/login.
// Tokens are signed (see token.go), so every scheduler instance configured
// with the same credentials accepts them, also after a restart.
type Auth struct {
	creds   Credentials
	clock   clock.Clock
	key     []byte
	revoked Revocations // nil: logout forgets nothing (tests without a registry)

	mu       sync.Mutex
	failures map[string][]time.Time // recent failed logins by client address
}

// Login throttling: at most maxFailures failed logins per client address
// within failureWindow; further attempts get 429 until the window passes.
const (
	maxFailures   = 10
	failureWindow = time.Minute
)

// NewAuth makes an authenticator. revoked may be nil.
func NewAuth(creds Credentials, clk clock.Clock, revoked Revocations) *Auth {
	if creds.TokenTTL <= 0 {
		creds.TokenTTL = 12 * time.Hour
	}
	return &Auth{creds: creds, clock: clk, key: tokenKey(creds), revoked: revoked, failures: map[string][]time.Time{}}
}

// Open reports whether anonymous callers are admins.
func (a *Auth) Open() bool { return a.creds.AdminUser == "" }

func eq(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// check returns the role of a user/password pair.
func (a *Auth) check(user, pass string) (Role, bool) {
	switch {
	case a.creds.AdminUser != "" && eq(user, a.creds.AdminUser) && eq(pass, a.creds.AdminPassword):
		return RoleAdmin, true
	case a.creds.GuestUser != "" && eq(user, a.creds.GuestUser) && eq(pass, a.creds.GuestPassword):
		return RoleGuest, true
	}
	return "", false
}

// Login issues a signed token valid for the TTL.
func (a *Auth) Login(user, pass string) (token string, role Role, expires time.Time, err error) {
	role, ok := a.check(user, pass)
	if !ok && a.Open() {
		role, ok = RoleAdmin, true
	}
	if !ok {
		return "", "", time.Time{}, fmt.Errorf("%w: wrong user name or password", ErrUnauthorized)
	}
	expires = a.clock.Now().Add(a.creds.TokenTTL)
	token, err = a.sign(claims{User: user, Role: role, Expires: expires.UnixNano()})
	if err != nil {
		return "", "", time.Time{}, fmt.Errorf("login: %w", err)
	}
	return token, role, expires, nil
}

// throttled reports whether addr failed too often recently.
func (a *Auth) throttled(addr string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	cutoff := a.clock.Now().Add(-failureWindow)
	recent := a.failures[addr][:0]
	for _, t := range a.failures[addr] {
		if t.After(cutoff) {
			recent = append(recent, t)
		}
	}
	if len(recent) == 0 {
		delete(a.failures, addr)
	} else {
		a.failures[addr] = recent
	}
	return len(recent) >= maxFailures
}

func (a *Auth) failed(addr string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.failures) > 100_000 { // bound memory under a spray of addresses
		clear(a.failures)
	}
	a.failures[addr] = append(a.failures[addr], a.clock.Now())
}

// Logout revokes a token until it would have expired. An unknown or
// expired token needs no revocation.
func (a *Auth) Logout(ctx context.Context, token string) error {
	cl, err := a.verify(token)
	if err != nil || a.revoked == nil {
		return nil
	}
	return a.revoked.Revoke(ctx, cl.ID, time.Unix(0, cl.Expires), a.clock.Now())
}

// anonymous is the user of open access (no admin configured).
const anonymous = "anonymous"

// roleOf authenticates a request: bearer token, then Basic. user is who
// the caller is (or, refused, the Basic user name it tried).
func (a *Auth) roleOf(r *http.Request) (user string, role Role, err error) {
	if a.Open() { // no credentials exist to check: stale Basic or tokens must not lock callers out
		return anonymous, RoleAdmin, nil
	}
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		cl, err := a.session(r.Context(), strings.TrimSpace(strings.TrimPrefix(h, "Bearer ")))
		if err != nil {
			return "", "", err
		}
		return cl.User, cl.Role, nil
	}
	if user, pass, ok := r.BasicAuth(); ok {
		if role, ok := a.check(user, pass); ok {
			return user, role, nil
		}
		return user, "", fmt.Errorf("%w: wrong user name or password", ErrUnauthorized)
	}
	return "", "", fmt.Errorf("%w: log in (POST /api/login) or use HTTP Basic auth", ErrUnauthorized)
}

// session returns a token's claims if it is signed, unexpired and not
// logged out.
func (a *Auth) session(ctx context.Context, tok string) (claims, error) {
	cl, err := a.verify(tok)
	if err == nil && a.revoked != nil {
		if gone, rerr := a.revoked.Revoked(ctx, cl.ID); rerr != nil {
			return cl, fmt.Errorf("%w: check the token: %v", ErrUnavailable, rerr)
		} else if gone {
			err = errBadToken
		}
	}
	if err != nil {
		return cl, fmt.Errorf("%w: the token is unknown or expired; log in again", ErrUnauthorized)
	}
	return cl, nil
}

// isRead reports whether a request only reads.
func isRead(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

// middleware enforces auth on /api: guests may only read.
func (s *Server) authMiddleware(c *gin.Context) {
	switch c.FullPath() {
	case "/api/login", "/api/logout": // logout only forgets the token it is sent
		c.Next()
		return
	case "/api/openapi.json": // the API's description holds no data
		c.Next()
		return
	}
	user, role, err := s.auth.roleOf(c.Request)
	c.Set(ctxUser, user)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	c.Set(ctxRole, role)
	if role != RoleAdmin && !isRead(c.Request.Method) {
		writeError(c, s.log, fmt.Errorf("%w: the %s role is read-only", ErrForbidden, role))
		return
	}
	c.Next()
}

type loginRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

func (s *Server) login(c *gin.Context) {
	body, err := readBody(c, s.maxBody)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	var req loginRequest
	if err := decodeStrict(body, &req); err != nil {
		writeError(c, s.log, err)
		return
	}
	c.Set(ctxUser, req.Username)
	addr := s.clientAddr(c.Request)
	if s.auth.throttled(addr) {
		writeError(c, s.log, fmt.Errorf("%w: too many failed logins; try again in a minute", ErrTooMany))
		return
	}
	tok, role, exp, err := s.auth.Login(req.Username, req.Password)
	if err != nil {
		s.auth.failed(addr)
		writeError(c, s.log, err)
		return
	}
	c.Set(ctxRole, role)
	c.JSON(http.StatusOK, gin.H{"token": tok, "role": role, "expiresAt": exp.UTC()})
}

func (s *Server) logout(c *gin.Context) {
	if h := c.GetHeader("Authorization"); strings.HasPrefix(h, "Bearer ") {
		tok := strings.TrimSpace(strings.TrimPrefix(h, "Bearer "))
		if cl, err := s.auth.session(c, tok); err == nil {
			c.Set(ctxUser, cl.User)
			c.Set(ctxRole, cl.Role)
		}
		if err := s.auth.Logout(c, tok); err != nil {
			writeError(c, s.log, err)
			return
		}
	}
	c.Status(http.StatusNoContent)
}

func (s *Server) whoami(c *gin.Context) {
	role, _ := c.Get(ctxRole)
	c.JSON(http.StatusOK, gin.H{"user": c.GetString(ctxUser), "role": role, "open": s.auth.Open()})
}
