package detector

import (
	"errors"
	"fmt"
	"net"
	"strings"
)

// Scheme is the prefix of a ZooKeeper master URL.
const Scheme = "zk://"

// URL is a parsed zk://[user:password@]host:port,host:port/path.
type URL struct {
	Servers []string // host:port (port 2181 added when missing)
	Path    string   // absolute znode path of the masters' group, without a trailing slash
	Digest  string   // "user:password" for the ZooKeeper digest scheme, or ""
}

// IsZK reports whether s is a zk:// URL.
func IsZK(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), Scheme) }

// ParseURL parses a ZooKeeper master URL the way Mesos does: everything from the first "/" after
// the scheme is the path ("/" when there is none), and everything before the last "@" of the rest
// are the digest credentials.
func ParseURL(raw string) (URL, error) {
	s := strings.TrimSpace(raw)
	if !strings.HasPrefix(s, Scheme) {
		return URL{}, fmt.Errorf("zk url %q: must start with %s", redact(raw), Scheme)
	}
	s = s[len(Scheme):]
	var u URL
	hosts := s
	if i := strings.IndexByte(s, '/'); i >= 0 {
		hosts, u.Path = s[:i], strings.TrimRight(s[i:], "/")
	}
	if u.Path == "" {
		return URL{}, fmt.Errorf("zk url %q: needs the path of the masters' znodes, like zk://host:2181/mesos", redact(raw))
	}
	if i := strings.LastIndexByte(hosts, '@'); i >= 0 {
		u.Digest, hosts = hosts[:i], hosts[i+1:]
		if user, _, ok := strings.Cut(u.Digest, ":"); !ok || user == "" {
			return URL{}, fmt.Errorf("zk url %q: credentials must be user:password", redact(raw))
		}
	}
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(strings.Trim(h, "[]"), "2181")
		}
		u.Servers = append(u.Servers, h)
	}
	if len(u.Servers) == 0 {
		return URL{}, errors.New("zk url " + redact(raw) + ": names no ZooKeeper server")
	}
	for _, seg := range strings.Split(u.Path[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return URL{}, fmt.Errorf("zk url %q: bad path %q", redact(raw), u.Path)
		}
	}
	return u, nil
}

// String is the URL with the password hidden.
func (u URL) String() string {
	cred := ""
	if u.Digest != "" {
		user, _, _ := strings.Cut(u.Digest, ":")
		cred = user + ":***@"
	}
	return Scheme + cred + strings.Join(u.Servers, ",") + u.Path
}

// Redact hides the password of a zk:// URL (other strings are returned as they are), for logs
// and configuration dumps.
func Redact(raw string) string {
	if !IsZK(raw) {
		return raw
	}
	return redact(raw)
}

func redact(raw string) string {
	s := strings.TrimSpace(raw)
	rest, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		return s
	}
	hosts, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		hosts, path = rest[:i], rest[i:]
	}
	i := strings.LastIndexByte(hosts, '@')
	if i < 0 {
		return s
	}
	user, _, _ := strings.Cut(hosts[:i], ":")
	return Scheme + user + ":***@" + hosts[i+1:] + path
}
