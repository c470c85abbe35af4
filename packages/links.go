package packages

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"

	"github.com/ejcloud/elasticjob/registry"
)

// Prefix is the URL path under which packages are served.
const Prefix = "/packages/"

// DefaultName is the file name of a package uploaded without one.
const DefaultName = "package"

// tokenLen is the token's length in hex digits (128 bits).
const tokenLen = 32

// Links builds and reads the URLs of hosted packages.
type Links struct {
	key  []byte
	base string // this instance's base URL, no trailing slash
}

// NewLinks returns Links signing with key and building URLs on base
// (e.g. http://sched-1:8899).
func NewLinks(key []byte, base string) *Links {
	return &Links{key: key, base: strings.TrimRight(base, "/")}
}

// Token is the capability part of a package's URL.
func (l *Links) Token(sha string) string {
	m := hmac.New(sha256.New, l.key)
	m.Write([]byte("elasticjob package " + sha))
	return hex.EncodeToString(m.Sum(nil))[:tokenLen]
}

// Path is the URL path of a package: /packages/{sha256}/{token}/{name}.
func (l *Links) Path(sha, name string) string {
	return Prefix + sha + "/" + l.Token(sha) + "/" + url.PathEscape(CleanName(name))
}

// URL is the package's URL on this instance.
func (l *Links) URL(sha, name string) string { return l.base + l.Path(sha, name) }

// Ref is a hosted package named by a URL.
type Ref struct {
	SHA256, Name string
}

// Parse reads a hosted package URL (on any instance's host): ok only when
// its path ends in /packages/{sha256}/{token}/{name} with a token made by
// this registry's key.
func (l *Links) Parse(raw string) (Ref, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return Ref{}, false
	}
	return l.parsePath(u.Path)
}

func (l *Links) parsePath(p string) (Ref, bool) {
	parts := strings.Split(p, "/")
	n := len(parts)
	if n < 5 || parts[n-4] != strings.Trim(Prefix, "/") {
		return Ref{}, false
	}
	sha, token, name := parts[n-3], parts[n-2], parts[n-1]
	if !ValidSHA(sha) || name == "" || name != CleanName(name) {
		return Ref{}, false
	}
	if !hmac.Equal([]byte(token), []byte(l.Token(sha))) {
		return Ref{}, false
	}
	return Ref{SHA256: sha, Name: name}, true
}

// Resolve rewrites a hosted package URL to this instance's base URL and
// returns any other URL unchanged. The leader applies it at launch, so an
// appURL stored by an instance that has since died still resolves to a
// live one (every instance keeps every package).
func (l *Links) Resolve(raw string) string {
	ref, ok := l.Parse(raw)
	if !ok {
		return raw
	}
	return l.URL(ref.SHA256, ref.Name)
}

// CleanName makes a client's file name a safe single URL segment: its base
// name with anything but letters, digits, '.', '_' and '-' replaced by '_',
// at most 128 bytes; DefaultName when nothing is left.
func CleanName(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	name = string(b)
	if len(name) > 128 {
		name = name[len(name)-128:] // keep the extension
	}
	if strings.Trim(name, ".") == "" {
		return DefaultName
	}
	return name
}

// LoadKey reads the token key from its registry cell
// (registry.Registry.PackageKey), creating it (32 random bytes) when this
// is the registry's first instance.
func LoadKey(ctx context.Context, cell registry.Cell) ([]byte, error) {
	for range 3 {
		v, ok, err := cell.Get(ctx)
		if err != nil {
			return nil, fmt.Errorf("packages: %w", err)
		}
		if ok {
			key, derr := hex.DecodeString(strings.TrimSpace(string(v)))
			if derr != nil || len(key) < 16 {
				return nil, fmt.Errorf("packages: %s holds no valid key (want at least 32 hex digits)", cell.Path())
			}
			return key, nil
		}
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("packages: make key: %w", err)
		}
		created, err := cell.Create(ctx, []byte(hex.EncodeToString(key)))
		if err != nil {
			return nil, fmt.Errorf("packages: %w", err)
		}
		if created {
			return key, nil
		} // else another instance made it first; read it
	}
	return nil, fmt.Errorf("packages: %s keeps changing", cell.Path())
}
