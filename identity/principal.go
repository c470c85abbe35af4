package identity

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
)

// Role is what a principal may do in one namespace.
type Role string

// Roles: view reads; edit reads and writes (publish, register, trigger,
// kill, delete) within the namespace.
const (
	View Role = "view"
	Edit Role = "edit"
)

// ParseRole checks a role's name.
func ParseRole(s string) (Role, error) {
	switch Role(s) {
	case View, Edit:
		return Role(s), nil
	}
	return "", fmt.Errorf("role %q is neither view nor edit", s)
}

// Allows reports whether the role permits a read (write false) or a write.
func (r Role) Allows(write bool) bool {
	return r == Edit || (r == View && !write)
}

// Kinds of principal (what the audit log records as the role).
const (
	KindAdmin     = "admin"     // the auth_username admin, or anyone on an open scheduler
	KindGuest     = "guest"     // the read-only guest of the default namespace
	KindUser      = "user"      // a user of the users file
	KindOIDC      = "oidc"      // a user of the OIDC provider (roles from its groups)
	KindToken     = "token"     // a namespace's API token
	KindAnonymous = "anonymous" // not authenticated
)

// Principal is an authenticated caller.
type Principal struct {
	Name  string
	Kind  string
	Admin bool // manages everything, namespaces included
	// Roles maps a namespace to the caller's role in it (none: no access).
	Roles map[string]Role
	// Groups are an OIDC user's groups (what its roles came from).
	Groups []string
}

// RoleIn returns the caller's role in a namespace (an admin edits every
// one).
func (p Principal) RoleIn(ns string) (Role, bool) {
	if p.Admin {
		return Edit, true
	}
	r, ok := p.Roles[ns]
	return r, ok
}

// Can reports whether the caller may read (write false) or write in ns.
func (p Principal) Can(ns string, write bool) bool {
	r, ok := p.RoleIn(ns)
	return ok && r.Allows(write)
}

// Namespaces lists the namespaces the caller has a role in, sorted (an
// admin's are every namespace: the caller asks the registry).
func (p Principal) Namespaces() []string {
	return slices.Sorted(maps.Keys(p.Roles))
}

// WithRole lists the namespaces where the caller's role allows a write
// (write true) or a read.
func (p Principal) WithRole(write bool) []string {
	var out []string
	for _, ns := range p.Namespaces() {
		if p.Roles[ns].Allows(write) {
			out = append(out, ns)
		}
	}
	return out
}

// ErrUnauthorized is wrapped by an authenticator that recognised its kind
// of credential and refused it (a wrong password, an unknown token).
var ErrUnauthorized = errors.New("unauthorized")

// Authenticator resolves one kind of credential. ok is false when the
// request carries none of its kind (the chain asks the next); err,
// wrapping ErrUnauthorized, when it carries one that is refused.
type Authenticator interface {
	Authenticate(ctx context.Context, r *http.Request) (p Principal, ok bool, err error)
}

// Chain asks its authenticators in order; the first that recognises the
// request's credential decides.
type Chain []Authenticator

// Authenticate returns the principal of the first authenticator that
// recognises the request; ok is false when none does.
func (c Chain) Authenticate(ctx context.Context, r *http.Request) (Principal, bool, error) {
	for _, a := range c {
		if p, ok, err := a.Authenticate(ctx, r); ok || err != nil {
			return p, ok, err
		}
	}
	return Principal{}, false, nil
}
