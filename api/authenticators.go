package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/ejcloud/elasticjob/identity"
	"github.com/ejcloud/elasticjob/registry"
)

// The authenticators of Auth's chain (identity.Chain), asked in order:
// the scheduler's session tokens, the namespaces' API tokens, HTTP Basic.
// Another kind of credential (an identity provider's ID token) is one more
// here; what a principal may do is checked in access.go alone.

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	return strings.TrimSpace(tok), ok
}

// sessionAuth accepts the signed tokens /api/login issues.
type sessionAuth struct{ a *Auth }

func (s sessionAuth) Authenticate(ctx context.Context, r *http.Request) (identity.Principal, bool, error) {
	tok, ok := bearer(r)
	if !ok || strings.HasPrefix(tok, identity.TokenPrefix) || (s.a.creds.OIDC != nil && !strings.HasPrefix(tok, tokenPrefix)) {
		return identity.Principal{}, false, nil // an API token, or an identity provider's
	}
	cl, err := s.a.session(ctx, tok)
	if err != nil {
		return identity.Principal{}, true, err
	}
	p, err := s.a.principalOfClaims(cl)
	return p, true, err
}

// principalOfClaims is who a session token stands for now: a user of the
// users file gets its roles as the file says at this request.
func (a *Auth) principalOfClaims(cl claims) (identity.Principal, error) {
	switch cl.Role {
	case RoleAdmin:
		return admin(cl.User), nil
	case RoleGuest:
		return guest(cl.User), nil
	case RoleOIDC:
		return a.oidcPrincipal(cl.User, cl.Groups), nil
	}
	if a.creds.Users != nil {
		if u, ok := a.creds.Users.Lookup(cl.User); ok && eq(fingerprint(u.Password), cl.PW) {
			return u.Principal(), nil
		}
	}
	return identity.Principal{Name: cl.User}, fmt.Errorf("%w: user '%s' is no longer in the users file, or its password changed; log in again", identity.ErrUnauthorized, cl.User)
}

// apiTokenAuth accepts the namespaces' API tokens.
type apiTokenAuth struct{ a *Auth }

func (t apiTokenAuth) Authenticate(ctx context.Context, r *http.Request) (identity.Principal, bool, error) {
	tok, ok := bearer(r)
	if !ok || !strings.HasPrefix(tok, identity.TokenPrefix) {
		return identity.Principal{}, false, nil
	}
	refused := fmt.Errorf("%w: the API token is unknown, revoked or expired", identity.ErrUnauthorized)
	id, secret, ok := identity.ParseAPIToken(tok)
	if !ok || t.a.tokens == nil {
		return identity.Principal{}, true, refused
	}
	rec, err := t.a.tokens.Token(ctx, id)
	if err != nil || !rec.Matches(secret) || (rec.ExpiresAt != nil && t.a.clock.Now().After(*rec.ExpiresAt)) {
		if err != nil && !errors.Is(err, registry.ErrTokenNotFound) {
			return identity.Principal{}, true, fmt.Errorf("%w: check the API token: %v", ErrUnavailable, err)
		}
		return identity.Principal{}, true, refused
	}
	return rec.Principal(), true, nil
}

// basicAuth checks HTTP Basic credentials.
type basicAuth struct{ a *Auth }

func (b basicAuth) Authenticate(_ context.Context, r *http.Request) (identity.Principal, bool, error) {
	user, pass, ok := r.BasicAuth()
	if !ok {
		return identity.Principal{}, false, nil
	}
	if p, ok := b.a.check(user, pass); ok {
		return p, true, nil
	}
	return identity.Principal{Name: user}, true, fmt.Errorf("%w: wrong user name or password", identity.ErrUnauthorized)
}
