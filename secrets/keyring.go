package secrets

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrNoKey: secrets are used without a key (secrets_key_file unset).
var ErrNoKey = errors.New("secrets need a key: set secrets_key_file (docs/tenancy.md, \"Secrets\")")

// ErrOpen: a sealed value does not open under any key of the keyring (a
// key removed too soon, or a record altered).
var ErrOpen = errors.New("secrets: the sealed value does not open with any key of secrets_key_file")

// KeySize is the size of a key: AES-256.
const KeySize = 32

type key struct {
	id    string
	aead  cipher.AEAD
	token []byte // the HMAC key of task fetch tokens, derived from the key
}

// Keyring is the operator's keys: the first seals, every one opens.
type Keyring struct{ keys []key }

var keyIDRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,32}$`)

// ParseKeyring reads a key file: one key a line, the current one first,
// each 32 random bytes in base64 (as `head -c 32 /dev/urandom | base64`
// writes) or hex, optionally named "ID:KEY" (the name is recorded with
// every value it seals; a bare key's name is derived from it). Blank lines
// and lines starting with # are skipped.
func ParseKeyring(b []byte) (*Keyring, error) {
	kr := &Keyring{}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, enc, named := strings.Cut(line, ":")
		if !named {
			id, enc = "", line
		}
		raw, err := decodeKey(enc)
		if err != nil {
			return nil, fmt.Errorf("secrets key file: line %d: %w", n, err)
		}
		if id == "" {
			sum := sha256.Sum256(append([]byte("elasticjob secrets key id\x00"), raw...))
			id = "k" + hex.EncodeToString(sum[:4])
		}
		if !keyIDRE.MatchString(id) {
			return nil, fmt.Errorf("secrets key file: line %d: a key's name must be 1-32 letters, digits, '.', '_' or '-'", n)
		}
		if seen[id] {
			return nil, fmt.Errorf("secrets key file: line %d: key %s appears twice", n, id)
		}
		seen[id] = true
		k, err := newKey(id, raw)
		if err != nil {
			return nil, fmt.Errorf("secrets key file: line %d: %w", n, err)
		}
		kr.keys = append(kr.keys, k)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("secrets key file: %w", err)
	}
	if len(kr.keys) == 0 {
		return nil, errors.New("secrets key file: no key in it (make one with: head -c 32 /dev/urandom | base64)")
	}
	return kr, nil
}

func decodeKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, dec := range []func(string) ([]byte, error){base64.StdEncoding.DecodeString, base64.RawStdEncoding.DecodeString,
		base64.URLEncoding.DecodeString, base64.RawURLEncoding.DecodeString, hex.DecodeString} {
		if b, err := dec(s); err == nil && len(b) == KeySize {
			return b, nil
		}
	}
	return nil, fmt.Errorf("a key must be %d random bytes in base64 or hex (head -c 32 /dev/urandom | base64)", KeySize)
}

func newKey(id string, raw []byte) (key, error) {
	block, err := aes.NewCipher(raw)
	if err != nil {
		return key{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return key{}, err
	}
	m := hmac.New(sha256.New, raw)
	m.Write([]byte("elasticjob secrets task token v1"))
	return key{id: id, aead: aead, token: m.Sum(nil)}, nil
}

// Current is the name of the key that seals.
func (kr *Keyring) Current() string { return kr.keys[0].id }

// Has reports whether the keyring holds a key of that name.
func (kr *Keyring) Has(id string) bool {
	_, ok := kr.find(id)
	return ok
}

func (kr *Keyring) find(id string) (key, bool) {
	for _, k := range kr.keys {
		if k.id == id {
			return k, true
		}
	}
	return key{}, false
}

// aad binds a sealed value to its namespace and name.
func aad(ns, name string) []byte {
	return []byte("elasticjob secret v1\x00" + ns + "\x00" + name)
}

// Seal encrypts a value for a namespace's secret under the current key.
// The record's other fields (who, when) are the caller's.
func (kr *Keyring) Seal(ns, name string, value []byte) (Sealed, error) {
	k := kr.keys[0]
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return Sealed{}, fmt.Errorf("secrets: seal: %w", err)
	}
	return Sealed{Meta: Meta{Namespace: ns, Name: name, KeyID: k.id, Size: len(value)}, Nonce: nonce, Ciphertext: k.aead.Seal(nil, nonce, value, aad(ns, name))}, nil
}

// Open decrypts a sealed value with the key it names.
func (kr *Keyring) Open(s Sealed) ([]byte, error) {
	k, ok := kr.find(s.KeyID)
	if !ok {
		return nil, fmt.Errorf("%w: secret '%s' of namespace '%s' is sealed under key %s, which the file no longer holds", ErrOpen, s.Name, s.Namespace, s.KeyID)
	}
	v, err := k.aead.Open(nil, s.Nonce, s.Ciphertext, aad(s.Namespace, s.Name))
	if err != nil {
		return nil, fmt.Errorf("%w: secret '%s' of namespace '%s' (key %s)", ErrOpen, s.Name, s.Namespace, s.KeyID)
	}
	return v, nil
}

// Reseal opens a value and seals it again under the current key (a
// rotation); a value already under it is returned as it is.
func (kr *Keyring) Reseal(s Sealed) (Sealed, bool, error) {
	if s.KeyID == kr.Current() {
		return s, false, nil
	}
	v, err := kr.Open(s)
	if err != nil {
		return s, false, err
	}
	n, err := kr.Seal(s.Namespace, s.Name, v)
	clear(v)
	if err != nil {
		return s, false, err
	}
	meta := s.Meta
	meta.KeyID = n.KeyID
	n.Meta = meta
	return n, true, nil
}

// TokenPrefix starts every task fetch token.
const TokenPrefix = "ejs1."

// TaskToken is the fetch token of a task: an HMAC of its id under the
// current key's token key. Every scheduler with the same key file derives
// the same one, so any of them checks it.
func (kr *Keyring) TaskToken(taskID string) string {
	return taskToken(kr.keys[0], taskID)
}

func taskToken(k key, taskID string) string {
	m := hmac.New(sha256.New, k.token)
	m.Write([]byte("task\x00" + taskID))
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// ValidTaskToken checks a task's fetch token against every key (a task
// launched before a rotation keeps its token while its key is held).
func (kr *Keyring) ValidTaskToken(taskID, tok string) bool {
	if taskID == "" || !strings.HasPrefix(tok, TokenPrefix) {
		return false
	}
	ok := false
	for _, k := range kr.keys {
		if hmac.Equal([]byte(tok), []byte(taskToken(k, taskID))) {
			ok = true
		}
	}
	return ok
}
