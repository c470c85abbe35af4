package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// OIDC is login through an OpenID Connect identity provider (the oidc_*
// settings; docs/tenancy.md, "OIDC login"): its ID tokens are accepted as
// bearer tokens, and the console logs in through the authorization code
// flow with PKCE. The groups of auth_users_file map the provider's groups
// onto namespace roles.
type OIDC struct {
	Issuer           string // oidc_issuer: the provider's issuer URL (discovery at /.well-known/openid-configuration)
	ClientID         string // oidc_client_id: the scheduler's client id; ID tokens must name it in aud
	ClientSecretFile string // oidc_client_secret_file: a file holding the client secret (console login)
	GroupsClaim      string // oidc_groups_claim: the claim listing the user's groups
	UsernameClaim    string // oidc_username_claim: the claim naming the user
	RedirectURL      string // oidc_redirect_url: the console login's callback (empty: advertise_url + /api/oidc/callback)
	Scopes           string // oidc_scopes: space-separated scopes the console login asks for
}

// Enabled reports whether OIDC login is configured.
func (o OIDC) Enabled() bool { return o.Issuer != "" }

// ScopeList is oidc_scopes split, openid always first.
func (o OIDC) ScopeList() []string {
	out := []string{"openid"}
	for _, s := range strings.Fields(o.Scopes) {
		if s != "openid" {
			out = append(out, s)
		}
	}
	return out
}

func authSettings() []setting {
	return []setting{
		{"secrets_key_file", "", "file with the AES-256 key(s) sealing the namespaces' secrets, one base64 key a line, the current first (head -c 32 /dev/urandom | base64); without it secrets are refused (docs/tenancy.md)", str(func(c *Config) *string { return &c.SecretsKeyFile })},
		{"metrics_token_file", "", "file holding a bearer token (at least 16 characters) that reads every series of GET /metrics and nothing else, for Prometheus's credentials_file; setting it makes metrics_access auto mean login (docs/operations.md#metrics)", str(func(c *Config) *string { return &c.MetricsTokenFile })},
		{"oidc_issuer", "", "OpenID Connect provider's issuer URL: its ID tokens are accepted as bearer tokens and the console offers its login (docs/tenancy.md); needs auth_username, auth_users_file and oidc_client_id", str(func(c *Config) *string { return &c.OIDC.Issuer })},
		{"oidc_client_id", "", "the scheduler's client id at the OIDC provider: ID tokens must carry it in their audience", str(func(c *Config) *string { return &c.OIDC.ClientID })},
		{"oidc_client_secret_file", "", "file holding the client secret of oidc_client_id (the console's login; empty: a public client, PKCE alone)", str(func(c *Config) *string { return &c.OIDC.ClientSecretFile })},
		{"oidc_groups_claim", "groups", "ID token claim with the user's groups, mapped onto namespace roles by the groups of auth_users_file", str(func(c *Config) *string { return &c.OIDC.GroupsClaim })},
		{"oidc_username_claim", "preferred_username", "ID token claim naming the user (then email, then sub, when it is absent)", str(func(c *Config) *string { return &c.OIDC.UsernameClaim })},
		{"oidc_redirect_url", "", "the console login's callback URL registered at the provider (empty: advertise_url + /api/oidc/callback)", str(func(c *Config) *string { return &c.OIDC.RedirectURL })},
		{"oidc_scopes", "openid profile email groups", "scopes the console login asks for, space-separated (openid is always asked)", str(func(c *Config) *string { return &c.OIDC.Scopes })},
	}
}

func init() { settings = append(settings, authSettings()...) }

// OIDCRedirect is the console login's callback URL.
func (c *Config) OIDCRedirect() string {
	if c.OIDC.RedirectURL != "" {
		return c.OIDC.RedirectURL
	}
	return c.Advertised() + "/api/oidc/callback"
}

// MetricsLogin reports whether GET /metrics asks for credentials: with
// metrics_access auto (the default), whenever teams are configured (a
// users file or OIDC) or a metrics token is; open stays the default only
// for a single-team scheduler.
func (c *Config) MetricsLogin() bool {
	switch c.MetricsAccess {
	case "login":
		return true
	case "open":
		return false
	}
	return c.UsersFile != "" || c.OIDC.Enabled() || c.MetricsTokenFile != ""
}

// MetricsOpenToTeams reports whether metrics_access=open serves every
// namespace's series to anyone though teams are configured (the start
// warns).
func (c *Config) MetricsOpenToTeams() bool {
	return c.MetricsAccess == "open" && c.AuthUsername != "" && (c.UsersFile != "" || c.OIDC.Enabled())
}

func (c *Config) validateAuth() []error {
	o := c.OIDC
	if !o.Enabled() {
		return nil
	}
	var errs []error
	if u, err := url.Parse(o.Issuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		errs = append(errs, fmt.Errorf("oidc_issuer: %q must be the provider's issuer URL, like https://accounts.example.com", o.Issuer))
	}
	if o.ClientID == "" {
		errs = append(errs, errors.New("oidc_issuer needs oidc_client_id: the scheduler's client id at the provider"))
	}
	if c.AuthUsername == "" {
		errs = append(errs, errors.New("oidc_issuer needs auth_username and auth_password: without an admin, access is open and every caller is the admin"))
	}
	if c.UsersFile == "" {
		errs = append(errs, errors.New("oidc_issuer needs auth_users_file: its groups map the provider's groups onto namespace roles"))
	}
	if strings.TrimSpace(o.GroupsClaim) == "" || strings.TrimSpace(o.UsernameClaim) == "" {
		errs = append(errs, errors.New("oidc_groups_claim and oidc_username_claim must name claims"))
	}
	if o.RedirectURL != "" {
		if u, err := url.Parse(o.RedirectURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, fmt.Errorf("oidc_redirect_url: %q must be an http(s) URL ending in /api/oidc/callback", o.RedirectURL))
		}
	}
	return errs
}
