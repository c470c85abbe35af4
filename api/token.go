package api

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// Tokens are "ej1.<payload>.<mac>": the payload is base64url JSON claims,
// the mac an HMAC-SHA256 of "ej1.<payload>" under a key derived from the
// configured credentials. Every instance with the same credentials derives
// the same key, so any instance accepts a token another issued, and
// changing a password invalidates every token issued under the old one.

const tokenPrefix = "ej1."

type claims struct {
	User    string `json:"u"`
	Role    Role   `json:"r"` // admin, guest or user (whose roles the users file gives at each request)
	Expires int64  `json:"e"` // Unix nanoseconds
	ID      string `json:"i"` // random; names the token for logout
	// PW fingerprints a users-file user's password hash at login: a new
	// password ends the sessions of the old one.
	PW string `json:"p,omitempty"`
	// Groups are an OIDC user's groups at login: its roles are what the
	// users file's groups give them at each request.
	Groups []string `json:"g,omitempty"`
}

// fingerprint is a short digest of a password hash (never the hash).
func fingerprint(hash string) string {
	sum := sha256.Sum256([]byte("elasticjob-cloud session v1\x00" + hash))
	return hex.EncodeToString(sum[:8])
}

// tokenKey derives the signing key from the credentials.
func tokenKey(c Credentials) []byte {
	h := sha256.New()
	for _, part := range []string{"elasticjob-cloud token key v1", c.AdminUser, c.AdminPassword, c.GuestUser, c.GuestPassword} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return h.Sum(nil)
}

func (a *Auth) sign(cl claims) (string, error) {
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", err
	}
	cl.ID = hex.EncodeToString(id[:])
	body, err := json.Marshal(cl)
	if err != nil {
		return "", err
	}
	head := tokenPrefix + base64.RawURLEncoding.EncodeToString(body)
	return head + "." + base64.RawURLEncoding.EncodeToString(a.mac(head)), nil
}

func (a *Auth) mac(s string) []byte {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte(s))
	return m.Sum(nil)
}

var errBadToken = errors.New("bad token")

// verify checks a token's signature, claims and expiry.
func (a *Auth) verify(tok string) (claims, error) {
	var cl claims
	i := strings.LastIndexByte(tok, '.')
	if !strings.HasPrefix(tok, tokenPrefix) || i <= len(tokenPrefix) {
		return cl, errBadToken
	}
	sig, err := base64.RawURLEncoding.DecodeString(tok[i+1:])
	if err != nil || !hmac.Equal(sig, a.mac(tok[:i])) {
		return cl, errBadToken
	}
	body, err := base64.RawURLEncoding.DecodeString(tok[len(tokenPrefix):i])
	if err != nil || json.Unmarshal(body, &cl) != nil || cl.ID == "" {
		return cl, errBadToken
	}
	if cl.Role != RoleAdmin && cl.Role != RoleGuest && cl.Role != RoleUser && cl.Role != RoleOIDC {
		return cl, errBadToken
	}
	if a.clock.Now().After(time.Unix(0, cl.Expires)) { // valid up to the instant itself
		return cl, errBadToken
	}
	return cl, nil
}
