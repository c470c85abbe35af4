package identity

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/goccy/go-yaml"
	"golang.org/x/crypto/bcrypt"

	"github.com/ejcloud/elasticjob/namespace"
)

// User is one entry of the users file.
type User struct {
	Name       string          `yaml:"name"`
	Password   string          `yaml:"password"`
	Namespaces map[string]Role `yaml:"namespaces"`
}

// Principal is the user as a caller.
func (u User) Principal() Principal {
	roles := make(map[string]Role, len(u.Namespaces))
	for ns, r := range u.Namespaces {
		roles[ns] = r
	}
	return Principal{Name: u.Name, Kind: KindUser, Roles: roles}
}

type usersDoc struct {
	Users  []User  `yaml:"users"`
	Groups []Group `yaml:"groups"`
}

// Group maps an identity provider's group (OIDC, the oidc_groups_claim of
// its tokens) onto namespace roles.
type Group struct {
	Name       string          `yaml:"name"`
	Namespaces map[string]Role `yaml:"namespaces"`
}

// ParseGroups reads the groups of a users file's content.
func ParseGroups(b []byte) (map[string]Group, error) {
	var doc usersDoc
	if err := yaml.UnmarshalWithOptions(b, &doc, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("users file: %w", err)
	}
	out := make(map[string]Group, len(doc.Groups))
	for i, g := range doc.Groups {
		where := fmt.Sprintf("users file: group %d (%q)", i+1, g.Name)
		switch {
		case strings.TrimSpace(g.Name) == "" || len(g.Name) > 200:
			return nil, fmt.Errorf("%s: name must be 1-200 characters", where)
		case out[g.Name].Name != "":
			return nil, fmt.Errorf("%s: the name appears twice", where)
		}
		for ns, r := range g.Namespaces {
			if err := namespace.ValidateName(ns); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			if _, err := ParseRole(string(r)); err != nil {
				return nil, fmt.Errorf("%s: namespace %s: %w", where, ns, err)
			}
		}
		out[g.Name] = g
	}
	return out, nil
}

// RolesOfGroups merges the roles the file's groups give to a member of
// groups (edit wins over view); none: no access.
func (f *UsersFile) RolesOfGroups(groups []string) map[string]Role {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.current()
	roles := map[string]Role{}
	for _, name := range groups {
		for ns, r := range f.groups[name].Namespaces {
			if roles[ns] != Edit {
				roles[ns] = r
			}
		}
	}
	return roles
}

// ParseUsers reads a users file's content. reserved are names no entry
// may take (the admin's and the guest's). Every problem is an error that
// names the entry: a file with one is refused as a whole.
func ParseUsers(b []byte, reserved ...string) (map[string]User, error) {
	var doc usersDoc
	if err := yaml.UnmarshalWithOptions(b, &doc, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("users file: %w", err)
	}
	out := make(map[string]User, len(doc.Users))
	for i, u := range doc.Users {
		where := fmt.Sprintf("users file: entry %d (%q)", i+1, u.Name)
		switch {
		case strings.TrimSpace(u.Name) == "" || strings.ContainsAny(u.Name, ":\n\r\t ") || len(u.Name) > 100:
			return nil, fmt.Errorf("%s: name must be 1-100 characters without ':' or spaces", where)
		case out[u.Name].Name != "":
			return nil, fmt.Errorf("%s: the name appears twice", where)
		}
		for _, r := range reserved {
			if r != "" && r == u.Name {
				return nil, fmt.Errorf("%s: the name is the admin's or the guest's (auth_username, guest_username)", where)
			}
		}
		// htpasswd -nbB prints "name:hash": take the hash of a pasted line.
		u.Password = strings.TrimPrefix(u.Password, u.Name+":")
		if _, err := bcrypt.Cost([]byte(u.Password)); err != nil || !strings.HasPrefix(u.Password, "$2") {
			return nil, fmt.Errorf("%s: password must be a bcrypt hash (htpasswd -nbB %s PASSWORD prints one): %v", where, u.Name, err)
		}
		for ns, r := range u.Namespaces {
			if err := namespace.ValidateName(ns); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			if _, err := ParseRole(string(r)); err != nil {
				return nil, fmt.Errorf("%s: namespace %s: %w", where, ns, err)
			}
		}
		out[u.Name] = u
	}
	return out, nil
}

// UsersFile is the users file, read again when it changes (its size,
// modification time or inode): a bad new version is logged and the last
// good one stays in force.
type UsersFile struct {
	path     string
	reserved []string
	log      *slog.Logger

	mu       sync.Mutex
	stamp    stamp
	content  []byte
	users    map[string]User
	groups   map[string]Group
	verified map[string][32]byte // user → sha256 of the password last verified (bcrypt is slow by design)
}

type stamp struct {
	size  int64
	mod   time.Time
	inode uint64
}

// dummyHash is compared against for an unknown user, so a refusal takes
// as long whether or not the user exists.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("no such user"), bcrypt.MinCost)

// OpenUsersFile reads the users file at path; a file that cannot be read
// or parsed is an error here (at start), and only logged on later reloads.
func OpenUsersFile(path string, log *slog.Logger, reserved ...string) (*UsersFile, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &UsersFile{path: path, reserved: reserved, log: log}
	if err := f.reload(); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *UsersFile) reload() error {
	st, err := os.Stat(f.path)
	if err != nil {
		return fmt.Errorf("users file: %w", err)
	}
	s := stampOf(st)
	if f.users != nil && s == f.stamp {
		return nil
	}
	b, err := os.ReadFile(f.path)
	if err != nil {
		return fmt.Errorf("users file: %w", err)
	}
	if f.users != nil && bytes.Equal(b, f.content) {
		f.stamp = s
		return nil
	}
	users, err := ParseUsers(b, f.reserved...)
	if err != nil {
		return fmt.Errorf("%s: %w", f.path, err)
	}
	groups, err := ParseGroups(b)
	if err != nil {
		return fmt.Errorf("%s: %w", f.path, err)
	}
	if f.users != nil {
		f.log.Info("users file reloaded", "path", f.path, "users", len(users))
	}
	f.stamp, f.content, f.users, f.groups, f.verified = s, b, users, groups, map[string][32]byte{}
	return nil
}

// current reloads the file if it changed; the caller holds mu.
func (f *UsersFile) current() {
	if err := f.reload(); err != nil {
		f.log.Error("users file not reloaded: the last good version stays in force", "err", err)
		if st, serr := os.Stat(f.path); serr == nil {
			f.stamp = stampOf(st) // log a bad version once, not on every request
		}
	}
}

// Lookup returns a user as the file holds it now.
func (f *UsersFile) Lookup(name string) (User, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.current()
	u, ok := f.users[name]
	return u, ok
}

// Check verifies a user's password.
func (f *UsersFile) Check(name, password string) (User, bool) {
	f.mu.Lock()
	f.current()
	u, ok := f.users[name]
	seen, cached := f.verified[name]
	f.mu.Unlock()
	sum := sha256.Sum256([]byte(password))
	if ok && cached && subtle.ConstantTimeCompare(seen[:], sum[:]) == 1 {
		return u, true
	}
	hash := dummyHash
	if ok {
		hash = []byte(u.Password)
	}
	if err := bcrypt.CompareHashAndPassword(hash, []byte(password)); err != nil || !ok {
		return User{}, false
	}
	f.mu.Lock()
	if cur, still := f.users[name]; still && cur.Password == u.Password {
		f.verified[name] = sum
	}
	f.mu.Unlock()
	return u, true
}

// ErrNoUsersFile: no users file is configured.
var ErrNoUsersFile = errors.New("no users file")
