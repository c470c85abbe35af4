package api

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/gin-gonic/gin"
	"golang.org/x/oauth2"

	"github.com/ejcloud/elasticjob/identity"
)

// OIDC is login through an OpenID Connect provider: its ID tokens are
// bearer tokens of the API (ejctl, CI), and the console logs in through
// the authorization code flow with PKCE and a state, ending in a session
// token of the same shape as /api/login's. The provider's groups claim is
// mapped onto namespace roles by the groups of the users file, at every
// request (a changed file applies at once).
type OIDC struct {
	provider      *oidc.Provider
	verifier      *oidc.IDTokenVerifier
	oauth         oauth2.Config
	groupsClaim   string
	usernameClaim string
	client        *http.Client
}

// OIDCConfig configures NewOIDC (the oidc_* settings).
type OIDCConfig struct {
	Issuer, ClientID, ClientSecret, RedirectURL string
	Scopes                                      []string
	GroupsClaim, UsernameClaim                  string
	HTTPClient                                  *http.Client // nil: a client with a 30 s timeout
}

// NewOIDC asks the provider's discovery document (issuer +
// /.well-known/openid-configuration): an issuer that does not answer, or
// answers for another issuer, is an error here, at start.
func NewOIDC(ctx context.Context, c OIDCConfig) (*OIDC, error) {
	hc := c.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, hc), c.Issuer)
	if err != nil {
		return nil, fmt.Errorf("oidc_issuer %s: discovery: %w", c.Issuer, err)
	}
	return &OIDC{
		provider: p,
		verifier: p.VerifierContext(oidc.ClientContext(context.WithoutCancel(ctx), hc), &oidc.Config{ClientID: c.ClientID}),
		oauth: oauth2.Config{ClientID: c.ClientID, ClientSecret: c.ClientSecret, RedirectURL: c.RedirectURL,
			Endpoint: p.Endpoint(), Scopes: c.Scopes},
		groupsClaim: c.GroupsClaim, usernameClaim: c.UsernameClaim, client: hc,
	}, nil
}

// identify verifies an ID token (signature, issuer, audience, expiry) and
// returns who it names and its groups.
func (o *OIDC) identify(ctx context.Context, raw string) (name string, groups []string, tok *oidc.IDToken, err error) {
	tok, cl, err := o.verify(ctx, raw)
	if err != nil {
		return "", nil, nil, err
	}
	name, groups, _, _ = o.fromClaims(cl)
	return name, groups, tok, nil
}

func (o *OIDC) verify(ctx context.Context, raw string) (*oidc.IDToken, map[string]any, error) {
	tok, err := o.verifier.Verify(ctx, raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: the ID token is not valid: %v", identity.ErrUnauthorized, err)
	}
	var cl map[string]any
	if err := tok.Claims(&cl); err != nil {
		return nil, nil, fmt.Errorf("%w: the ID token's claims: %v", identity.ErrUnauthorized, err)
	}
	return tok, cl, nil
}

// fromClaims reads the user's name (the username claim, else email, else
// sub) and groups; named and grouped say whether the username and groups
// claims themselves were there.
func (o *OIDC) fromClaims(cl map[string]any) (name string, groups []string, named, grouped bool) {
	for i, k := range []string{o.usernameClaim, "email", "sub"} {
		if s, ok := cl[k].(string); ok && s != "" {
			name, named = s, i == 0
			break
		}
	}
	switch g := cl[o.groupsClaim].(type) {
	case []any:
		grouped = true
		for _, v := range g {
			if s, ok := v.(string); ok {
				groups = append(groups, s)
			}
		}
	case string: // some providers send one group as a string
		grouped = true
		groups = strings.Fields(strings.ReplaceAll(g, ",", " "))
	}
	return name, groups, named, grouped
}

// identifyLogin is identify for the console's login, which also holds an
// access token: when the ID token lacks the username or the groups claim
// (providers put the profile into the ID token only when no access token
// is issued, OIDC Core 5.4), they are read from the provider's UserInfo
// endpoint, whose subject must be the ID token's.
func (o *OIDC) identifyLogin(ctx context.Context, raw string, access *oauth2.Token) (name string, groups []string, tok *oidc.IDToken, err error) {
	tok, cl, err := o.verify(ctx, raw)
	if err != nil {
		return "", nil, nil, err
	}
	name, groups, named, grouped := o.fromClaims(cl)
	if named && grouped {
		return name, groups, tok, nil
	}
	ui, err := o.provider.UserInfo(ctx, oauth2.StaticTokenSource(access))
	if err != nil {
		// a provider without UserInfo: the ID token's claims are all there is
		return name, groups, tok, nil
	}
	if ui.Subject != tok.Subject {
		return "", nil, nil, fmt.Errorf("%w: the provider's user info names subject %q, the ID token %q", identity.ErrUnauthorized, ui.Subject, tok.Subject)
	}
	var uc map[string]any
	if err := ui.Claims(&uc); err != nil {
		return "", nil, nil, fmt.Errorf("%w: the provider's user info: %v", identity.ErrUnauthorized, err)
	}
	uname, ugroups, unamed, ugrouped := o.fromClaims(uc)
	if !named && unamed {
		name = uname
	}
	if !grouped && ugrouped {
		groups = ugroups
	}
	return name, groups, tok, nil
}

// oidcPrincipal is a provider's user as a caller: its roles are those the
// users file's groups give its groups now.
func (a *Auth) oidcPrincipal(name string, groups []string) identity.Principal {
	p := identity.Principal{Name: name, Kind: identity.KindOIDC, Groups: groups, Roles: map[string]identity.Role{}}
	if a.creds.Users != nil {
		p.Roles = a.creds.Users.RolesOfGroups(groups)
	}
	return p
}

// oidcAuth accepts a provider's ID tokens as bearer tokens (any bearer
// that is neither a session token nor an API token, when OIDC is on).
type oidcAuth struct{ a *Auth }

func (o oidcAuth) Authenticate(ctx context.Context, r *http.Request) (identity.Principal, bool, error) {
	tok, ok := bearer(r)
	if !ok || o.a.creds.OIDC == nil {
		return identity.Principal{}, false, nil
	}
	name, groups, _, err := o.a.creds.OIDC.identify(ctx, tok)
	if err != nil {
		return identity.Principal{}, true, err
	}
	return o.a.oidcPrincipal(name, groups), true, nil
}

// The console's login: /api/oidc/login sends the browser to the provider
// with a state, a nonce and a PKCE challenge, kept in a signed, HttpOnly
// cookie for ten minutes; /api/oidc/callback checks them, exchanges the
// code, verifies the ID token and hands the console a session token in
// the URL's fragment (never sent to a server, nor logged).
const (
	oidcCookie   = "ej_oidc"
	oidcFlowTTL  = 10 * time.Minute
	oidcTokenKey = "oidc_token"
)

type oidcFlow struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Expires  int64  `json:"e"`
}

func randomHex() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (a *Auth) sealFlow(f oidcFlow) string {
	body, _ := json.Marshal(f)
	head := "oidc." + base64.RawURLEncoding.EncodeToString(body)
	return head + "." + base64.RawURLEncoding.EncodeToString(a.mac(head))
}

func (a *Auth) openFlow(v string) (oidcFlow, error) {
	var f oidcFlow
	i := strings.LastIndexByte(v, '.')
	if !strings.HasPrefix(v, "oidc.") || i < 0 {
		return f, errBadToken
	}
	sig, err := base64.RawURLEncoding.DecodeString(v[i+1:])
	if err != nil || !eq(string(sig), string(a.mac(v[:i]))) {
		return f, errBadToken
	}
	body, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(v[:i], "oidc."))
	if err != nil || json.Unmarshal(body, &f) != nil || a.clock.Now().UnixNano() > f.Expires {
		return f, errBadToken
	}
	return f, nil
}

func (s *consoleHandlers) oidcInfo(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"enabled": s.auth.creds.OIDC != nil, "login": "/api/oidc/login"})
}

func (s *consoleHandlers) oidcLogin(c *gin.Context) {
	o := s.auth.creds.OIDC
	if o == nil {
		writeError(c, s.log, fmt.Errorf("%w: OIDC login is not configured (oidc_issuer)", ErrNotFound))
		return
	}
	f := oidcFlow{State: randomHex(), Nonce: randomHex(), Verifier: oauth2.GenerateVerifier(),
		Expires: s.auth.clock.Now().Add(oidcFlowTTL).UnixNano()}
	http.SetCookie(c.Writer, &http.Cookie{Name: oidcCookie, Value: s.auth.sealFlow(f), Path: "/api/oidc",
		MaxAge: int(oidcFlowTTL / time.Second), HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: c.Request.TLS != nil})
	c.Redirect(http.StatusFound, o.oauth.AuthCodeURL(f.State, oauth2.S256ChallengeOption(f.Verifier), oidc.Nonce(f.Nonce)))
}

// oidcCallback ends the console's login. A refusal goes back to a browser
// (a page navigation, which accepts HTML) as the console's login form with
// the reason in the fragment, and to any other client as the API's error.
func (s *consoleHandlers) oidcCallback(c *gin.Context) {
	err := s.oidcFinish(c)
	if err == nil {
		return
	}
	if !strings.Contains(c.GetHeader("Accept"), "text/html") {
		writeError(c, s.log, err)
		return
	}
	s.log.Info("oidc login refused", "err", err)
	c.Redirect(http.StatusFound, "/#"+url.Values{"oidc_error": {err.Error()}}.Encode())
}

func (s *consoleHandlers) oidcFinish(c *gin.Context) error {
	o := s.auth.creds.OIDC
	if o == nil {
		return fmt.Errorf("%w: OIDC login is not configured (oidc_issuer)", ErrNotFound)
	}
	if e := c.Query("error"); e != "" {
		return fmt.Errorf("%w: the identity provider refused the login: %s %s", ErrUnauthorized, e, c.Query("error_description"))
	}
	ck, err := c.Cookie(oidcCookie)
	if err != nil {
		return fmt.Errorf("%w: no login in progress (or it took longer than %s): start again at /api/oidc/login", ErrUnauthorized, oidcFlowTTL)
	}
	http.SetCookie(c.Writer, &http.Cookie{Name: oidcCookie, Path: "/api/oidc", MaxAge: -1, HttpOnly: true})
	f, err := s.auth.openFlow(ck)
	if err != nil || !eq(f.State, c.Query("state")) {
		return fmt.Errorf("%w: the login's state does not match (expired, or not started here): start again at /api/oidc/login", ErrUnauthorized)
	}
	ctx := oidc.ClientContext(c, o.client)
	tok, err := o.oauth.Exchange(ctx, c.Query("code"), oauth2.VerifierOption(f.Verifier))
	if err != nil {
		return fmt.Errorf("%w: exchanging the code at the identity provider: %v", ErrUnauthorized, err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return fmt.Errorf("%w: the identity provider's answer has no ID token (is the openid scope allowed?)", ErrUnauthorized)
	}
	name, groups, idt, err := o.identifyLogin(ctx, raw, tok)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrUnauthorized, strings.TrimPrefix(err.Error(), identity.ErrUnauthorized.Error()+": "))
	}
	if !eq(idt.Nonce, f.Nonce) {
		return fmt.Errorf("%w: the ID token's nonce does not match the login's", ErrUnauthorized)
	}
	c.Set(ctxUser, name)
	p := s.auth.oidcPrincipal(name, groups)
	if len(p.Roles) == 0 {
		return noGroupRole(p)
	}
	c.Set(ctxRole, Role(p.Kind))
	cl := claims{User: name, Role: RoleOIDC, Groups: groups, Expires: s.auth.clock.Now().Add(s.auth.creds.TokenTTL).UnixNano()}
	session, err := s.auth.sign(cl)
	if err != nil {
		return fmt.Errorf("oidc login: %w", err)
	}
	frag := url.Values{oidcTokenKey: {session}, "user": {name}, "expires": {strconv.FormatInt(cl.Expires, 10)}}
	c.Redirect(http.StatusFound, "/#"+frag.Encode())
	return nil
}

// noGroupRole refuses a provider's user none of whose groups has a role.
func noGroupRole(p identity.Principal) error {
	return fmt.Errorf("%w: %s signed in through OIDC, but none of its groups %q has a role in any namespace: ask the admin to map one in the groups of auth_users_file", ErrForbidden, p.Name, p.Groups)
}
