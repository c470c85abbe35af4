package identity

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// APIToken is a namespace's API token as the scheduler keeps it: never
// the token itself, only its hash (a token is shown once, when created).
// Tokens are for CI: they act in one namespace with one role, until
// revoked or expired.
type APIToken struct {
	ID        string     `json:"id"`
	Namespace string     `json:"namespace"`
	Name      string     `json:"name"` // what it is for ("ci", "deploy")
	Role      Role       `json:"role"`
	Hash      string     `json:"hash,omitempty"` // sha256 of the secret, hex
	CreatedBy string     `json:"createdBy"`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// TokenPrefix starts every namespace API token: "ejn_{id}_{secret}".
const TokenPrefix = "ejn_"

// NewAPIToken makes a token's id and secret: the token to hand out once,
// and the record (with the secret's hash) to keep.
func NewAPIToken(rec APIToken) (token string, kept APIToken, err error) {
	var id [8]byte
	var secret [32]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", rec, fmt.Errorf("token: %w", err)
	}
	if _, err := rand.Read(secret[:]); err != nil {
		return "", rec, fmt.Errorf("token: %w", err)
	}
	rec.ID = hex.EncodeToString(id[:])
	s := base64.RawURLEncoding.EncodeToString(secret[:])
	rec.Hash = hashSecret(s)
	return TokenPrefix + rec.ID + "_" + s, rec, nil
}

func hashSecret(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// ParseAPIToken splits a token into its id and secret; ok is false for
// anything that is not a namespace API token.
func ParseAPIToken(tok string) (id, secret string, ok bool) {
	rest, ok := strings.CutPrefix(tok, TokenPrefix)
	if !ok {
		return "", "", false
	}
	id, secret, ok = strings.Cut(rest, "_")
	if !ok || len(id) != 16 || secret == "" || strings.ContainsAny(id, "/.") {
		return "", "", false
	}
	if _, err := hex.DecodeString(id); err != nil {
		return "", "", false
	}
	return id, secret, true
}

// Matches reports whether secret is the token's (in constant time).
func (t APIToken) Matches(secret string) bool {
	return subtle.ConstantTimeCompare([]byte(hashSecret(secret)), []byte(t.Hash)) == 1
}

// Principal is the token as a caller.
func (t APIToken) Principal() Principal {
	return Principal{Name: "token:" + t.Name + ":" + t.ID, Kind: KindToken, Roles: map[string]Role{t.Namespace: t.Role}}
}
