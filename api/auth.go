package api

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
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

// Auth checks Basic credentials and bearer tokens issued by /api/login.
type Auth struct {
	creds Credentials
	clock clock.Clock

	mu       sync.Mutex
	tokens   map[string]session
	failures map[string][]time.Time // recent failed logins by client address
}

// Login throttling: at most maxFailures failed logins per client address
// within failureWindow; further attempts get 429 until the window passes.
const (
	maxFailures   = 10
	failureWindow = time.Minute
)

type session struct {
	role    Role
	user    string
	expires time.Time
}

// NewAuth makes an authenticator.
func NewAuth(creds Credentials, clk clock.Clock) *Auth {
	if creds.TokenTTL <= 0 {
		creds.TokenTTL = 12 * time.Hour
	}
	return &Auth{creds: creds, clock: clk, tokens: map[string]session{}, failures: map[string][]time.Time{}}
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

// Login issues a random token valid for the TTL.
func (a *Auth) Login(user, pass string) (token string, role Role, expires time.Time, err error) {
	role, ok := a.check(user, pass)
	if !ok && a.Open() {
		role, ok = RoleAdmin, true
	}
	if !ok {
		return "", "", time.Time{}, fmt.Errorf("%w: wrong user name or password", ErrUnauthorized)
	}
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", time.Time{}, fmt.Errorf("login: %w", err)
	}
	token = hex.EncodeToString(b[:])
	now := a.clock.Now()
	expires = now.Add(a.creds.TokenTTL)
	a.mu.Lock()
	defer a.mu.Unlock()
	for t, s := range a.tokens { // drop expired sessions
		if now.After(s.expires) {
			delete(a.tokens, t)
		}
	}
	a.tokens[token] = session{role: role, user: user, expires: expires}
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

// Logout forgets a token.
func (a *Auth) Logout(token string) {
	a.mu.Lock()
	delete(a.tokens, token)
	a.mu.Unlock()
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
		s, ok := a.session(strings.TrimSpace(strings.TrimPrefix(h, "Bearer ")))
		if !ok {
			return "", "", fmt.Errorf("%w: the token is unknown or expired; log in again", ErrUnauthorized)
		}
		return s.user, s.role, nil
	}
	if user, pass, ok := r.BasicAuth(); ok {
		if role, ok := a.check(user, pass); ok {
			return user, role, nil
		}
		return user, "", fmt.Errorf("%w: wrong user name or password", ErrUnauthorized)
	}
	return "", "", fmt.Errorf("%w: log in (POST /api/login) or use HTTP Basic auth", ErrUnauthorized)
}

// session returns a token's unexpired session.
func (a *Auth) session(tok string) (session, bool) {
	a.mu.Lock()
	s, ok := a.tokens[tok]
	a.mu.Unlock()
	return s, ok && !a.clock.Now().After(s.expires)
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
		if ss, ok := s.auth.session(tok); ok {
			c.Set(ctxUser, ss.user)
			c.Set(ctxRole, ss.role)
		}
		s.auth.Logout(tok)
	}
	c.Status(http.StatusNoContent)
}

func (s *Server) whoami(c *gin.Context) {
	role, _ := c.Get(ctxRole)
	c.JSON(http.StatusOK, gin.H{"role": role, "open": s.auth.Open()})
}
