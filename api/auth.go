package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/identity"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/gin-gonic/gin"
)

// Role is the kind of caller a login or a token stands for (what the
// audit log records as the role); what a caller may do in each namespace
// is its identity.Principal's.
type Role string

const (
	RoleAdmin Role = identity.KindAdmin // manages everything
	RoleGuest Role = identity.KindGuest // reads the default namespace
	RoleUser  Role = identity.KindUser  // a user of the users file: its roles per namespace
	RoleOIDC  Role = identity.KindOIDC  // a user of the OIDC provider: roles from its groups
)

// Credentials configure auth. With no admin user, every caller is admin
// (the scheduler only allows that when listening on loopback).
type Credentials struct {
	AdminUser, AdminPassword string
	GuestUser, GuestPassword string
	TokenTTL                 time.Duration
	// Users is the users file (nil: none): users with a role per namespace.
	Users *identity.UsersFile
	// OIDC is login through an identity provider (nil: none; oidc.go).
	OIDC *OIDC
}

// Revocations remembers tokens that were logged out before they expired.
// The scheduler keeps them in the registry, so a token logged out on one
// instance is refused by every instance.
type Revocations interface {
	Revoked(ctx context.Context, id string) (bool, error)
	Revoke(ctx context.Context, id string, expires, now time.Time) error
}

// APITokens reads the namespaces' API tokens (the registry; tokens.go).
type APITokens interface {
	Token(ctx context.Context, id string) (identity.APIToken, error)
}

// Auth authenticates requests through a chain of authenticators (the
// signed session tokens /api/login issues, the namespaces' API tokens,
// HTTP Basic against the admin, the guest and the users file) into an
// identity.Principal. Session tokens are signed (token.go), so every
// scheduler instance configured with the same credentials accepts them,
// also after a restart.
type Auth struct {
	creds   Credentials
	clock   clock.Clock
	key     []byte
	revoked Revocations // nil: logout forgets nothing (tests without a registry)
	tokens  APITokens   // nil: no API tokens
	chain   identity.Chain

	mu       sync.Mutex
	failures map[string][]time.Time // recent failed logins by client address
}

// Login throttling: at most maxFailures failed logins per client address
// within failureWindow; further attempts get 429 until the window passes.
const (
	maxFailures   = 10
	failureWindow = time.Minute
)

// NewAuth makes an authenticator. revoked may be nil; when it also keeps
// the namespaces' API tokens (the registry does), they are accepted too.
func NewAuth(creds Credentials, clk clock.Clock, revoked Revocations) *Auth {
	if creds.TokenTTL <= 0 {
		creds.TokenTTL = 12 * time.Hour
	}
	a := &Auth{creds: creds, clock: clk, key: tokenKey(creds), revoked: revoked, failures: map[string][]time.Time{}}
	a.tokens, _ = revoked.(APITokens)
	a.chain = identity.Chain{sessionAuth{a}, apiTokenAuth{a}, oidcAuth{a}, basicAuth{a}}
	return a
}

// Open reports whether anonymous callers are admins.
func (a *Auth) Open() bool { return a.creds.AdminUser == "" }

// Teams reports whether the scheduler serves teams: an admin with a users
// file or an OIDC provider (then /metrics asks for a login by default).
func (a *Auth) Teams() bool {
	return !a.Open() && (a.creds.Users != nil || a.creds.OIDC != nil)
}

func eq(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// admin, guest and open are the principals of the configured admin, the
// guest and anyone on an open scheduler.
func admin(name string) identity.Principal {
	return identity.Principal{Name: name, Kind: identity.KindAdmin, Admin: true}
}

func guest(name string) identity.Principal {
	return identity.Principal{Name: name, Kind: identity.KindGuest, Roles: map[string]identity.Role{namespace.Default: identity.View}}
}

// check returns the principal of a user/password pair.
func (a *Auth) check(user, pass string) (identity.Principal, bool) {
	switch {
	case a.creds.AdminUser != "" && eq(user, a.creds.AdminUser) && eq(pass, a.creds.AdminPassword):
		return admin(user), true
	case a.creds.GuestUser != "" && eq(user, a.creds.GuestUser) && eq(pass, a.creds.GuestPassword):
		return guest(user), true
	case a.creds.Users != nil && user != a.creds.AdminUser && user != a.creds.GuestUser:
		if u, ok := a.creds.Users.Check(user, pass); ok {
			return u.Principal(), true
		}
	}
	return identity.Principal{}, false
}

// Login issues a signed token valid for the TTL.
func (a *Auth) Login(user, pass string) (token string, p identity.Principal, expires time.Time, err error) {
	p, ok := a.check(user, pass)
	if !ok && a.Open() {
		p, ok = admin(user), true
	}
	if !ok {
		return "", p, time.Time{}, fmt.Errorf("%w: wrong user name or password", ErrUnauthorized)
	}
	expires = a.clock.Now().Add(a.creds.TokenTTL)
	cl := claims{User: user, Role: Role(p.Kind), Expires: expires.UnixNano()}
	if p.Kind == identity.KindUser {
		u, _ := a.creds.Users.Lookup(user)
		cl.PW = fingerprint(u.Password)
	}
	token, err = a.sign(cl)
	if err != nil {
		return "", p, time.Time{}, fmt.Errorf("login: %w", err)
	}
	return token, p, expires, nil
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

// principalOf authenticates a request through the chain. name is who the
// caller is (or, refused, the Basic user name it tried).
func (a *Auth) principalOf(r *http.Request) (identity.Principal, error) {
	if a.Open() { // no credentials exist to check: stale Basic or tokens must not lock callers out
		return admin(anonymous), nil
	}
	p, ok, err := a.chain.Authenticate(r.Context(), r)
	switch {
	case errors.Is(err, identity.ErrUnauthorized):
		return p, fmt.Errorf("%w: %s", ErrUnauthorized, strings.TrimPrefix(err.Error(), identity.ErrUnauthorized.Error()+": "))
	case err != nil:
		return p, err
	case !ok:
		return p, fmt.Errorf("%w: log in (POST /api/login) or use HTTP Basic auth", ErrUnauthorized)
	}
	return p, nil
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
		return cl, fmt.Errorf("%w: the token is unknown or expired; log in again", identity.ErrUnauthorized)
	}
	return cl, nil
}

// isRead reports whether a request only reads.
func isRead(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

// authMiddleware authenticates every /api request but the login, the
// logout and the API's description, then checks what the route needs
// (access.go): the one place a role is checked.
func (s *Server) authMiddleware(c *gin.Context) {
	switch c.FullPath() {
	case "/api/login", "/api/logout": // logout only forgets the token it is sent
		c.Next()
		return
	case "/api/openapi.json", "/api/oidc", "/api/oidc/login", "/api/oidc/callback": // no data; the login's own checks (oidc.go)
		c.Next()
		return
	}
	p, ok := s.authenticate(c)
	if !ok {
		return
	}
	if err := s.authorize(c, p); err != nil {
		writeError(c, s.log, err)
		return
	}
	c.Next()
}

// authenticate puts the request's caller in the context, or answers why it has none (401)
// and returns false.
func (s *core) authenticate(c *gin.Context) (identity.Principal, bool) {
	p, err := s.auth.principalOf(c.Request)
	c.Set(ctxUser, p.Name)
	if err != nil {
		writeError(c, s.log, err)
		return p, false
	}
	c.Set(ctxPrincipal, p)
	c.Set(ctxRole, Role(p.Kind))
	return p, true
}

type loginRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
}
