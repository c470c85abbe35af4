package ejctl

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/identity"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/secrets"
)

// ejctl secret set/ls/rm in a namespace: the value goes in from stdin or
// a file and never comes out; another team cannot list or write them.
func TestSecretCommands(t *testing.T) {
	dir := t.TempDir()
	users := filepath.Join(dir, "users.yaml")
	if err := os.WriteFile(users, []byte(nsUsers), 0o600); err != nil {
		t.Fatal(err)
	}
	uf, err := identity.OpenUsersFile(users, nil)
	if err != nil {
		t.Fatal(err)
	}
	kr, err := secrets.ParseKeyring([]byte(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{5}, 32))))
	if err != nil {
		t.Fatal(err)
	}
	s := newTestServer(t, api.Credentials{AdminUser: "root", AdminPassword: "s3cret", Users: uf}, func(o *api.Options) { o.Tenancy.Secrets = kr })
	for _, ns := range []string{"pay", "search"} {
		if _, err := s.reg.Tenancy().PutNamespace(context.Background(), namespace.Record{Name: ns}); err != nil {
			t.Fatal(err)
		}
	}
	login := func(user, pw string) *run {
		r := s.cli(t)
		r.env["EJCTL_CONFIG"] = filepath.Join(dir, user+".json")
		r.stdin = pw + "\n"
		r.must(0, "login", "-u", user, "--password-stdin")
		return r
	}
	alice, bob := login("alice", "secret"), login("bob", "hunter2")
	const value = "pw-of-pay-7f3e"
	alice.stdin = value + "\n"
	out, _ := alice.must(0, "-n", "pay", "secret", "set", "db")
	has(t, "set", out, "secret db of namespace pay: version 1, 14 bytes")
	file := filepath.Join(dir, "tls.key")
	if err := os.WriteFile(file, []byte("line1\nline2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	alice.must(0, "-n", "pay", "secret", "set", "tls", "--from-file", file)
	sealed, _, err := s.reg.Tenancy().Secret(context.Background(), "pay", "tls")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := kr.Open(sealed); err != nil || string(v) != "line1\nline2\n" {
		t.Fatalf("the file's value: %q %v", v, err)
	}
	alice.stdin = value + "\n"
	alice.tty = true
	if _, errs, code := alice.do("-n", "pay", "secret", "set", "db"); code != 1 || !strings.Contains(errs, "pipe the value in") {
		t.Fatalf("set from a terminal: %d %s", code, errs)
	}
	alice.tty = false
	for _, args := range [][]string{{"-n", "pay", "secret", "ls"}, {"-n", "pay", "secret", "ls", "-o", "json"}} {
		out, _ = alice.must(0, args...)
		has(t, "ls", out, "db", "tls", "alice")
		if strings.Contains(out, value) || strings.Contains(out, base64.StdEncoding.EncodeToString([]byte(value))) || strings.Contains(out, "line1") {
			t.Fatalf("ls shows a value:\n%s", out)
		}
	}
	if _, errs, code := bob.do("-n", "pay", "secret", "ls"); code != 1 || !strings.Contains(errs, "no role in namespace 'pay'") {
		t.Fatalf("bob lists pay's secrets: %d %s", code, errs)
	}
	bob.stdin = "x"
	if _, _, code := bob.do("-n", "pay", "secret", "set", "db"); code != 1 {
		t.Fatal("bob overwrote pay's secret")
	}
	out, _ = bob.must(0, "-n", "search", "secret", "ls")
	if strings.Contains(out, "db") {
		t.Fatalf("search lists pay's secret:\n%s", out)
	}
	alice.must(0, "-n", "pay", "secret", "rm", "tls")
	if _, errs, code := alice.do("-n", "pay", "secret", "rm", "tls"); code != 1 || !strings.Contains(errs, "no secret 'tls'") {
		t.Fatalf("rm twice: %d %s", code, errs)
	}
}
