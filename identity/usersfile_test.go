package identity

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Hashes written by `htpasswd -nbB NAME PASSWORD` (apache2-utils): the
// $2y$ variant, cost 5.
const (
	aliceHash = `$2y$05$QTtPKarYJQKa6Rf.zXEmKeXox3z2FIMuqwm4L5IwxuZW22NrJgAGG`     // alice:secret
	bobLine   = `bob:$2y$05$775ogPsIQk6GuRP9SjwQq.60fB2IJJUJ78HpzhbvfsKcfpqvjKNCm` // bob:hunter2, the whole line pasted
)

func writeUsers(t *testing.T, path, body string, mod time.Time) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mod, mod); err != nil {
		t.Fatal(err)
	}
}

func TestUsersFileChecksHtpasswdHashesAndReloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users.yaml")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	writeUsers(t, path, "users:\n  - name: alice\n    password: '"+aliceHash+"'\n    namespaces: {pay: edit, search: view}\n"+
		"  - name: bob\n    password: '"+bobLine+"'\n    namespaces: {search: edit}\n", t0)
	f, err := OpenUsersFile(path, nil, "admin")
	if err != nil {
		t.Fatal(err)
	}
	u, ok := f.Check("alice", "secret")
	if !ok || u.Namespaces["pay"] != Edit || u.Namespaces["search"] != View {
		t.Fatalf("alice: %+v, %v", u, ok)
	}
	p := u.Principal()
	if !p.Can("pay", true) || !p.Can("search", false) || p.Can("search", true) || p.Can("default", false) || p.Admin {
		t.Fatalf("alice's principal %+v", p)
	}
	if _, ok := f.Check("alice", "wrong"); ok {
		t.Fatal("a wrong password passed")
	}
	if _, ok := f.Check("alice", "secret"); !ok { // the cached verification
		t.Fatal("the right password failed the second time")
	}
	if _, ok := f.Check("bob", "hunter2"); !ok {
		t.Fatal("bob's pasted htpasswd line")
	}
	if _, ok := f.Check("nobody", "secret"); ok {
		t.Fatal("an unknown user passed")
	}
	// alice leaves pay and her password changes: the next request sees it.
	writeUsers(t, path, "users:\n  - name: alice\n    password: '"+bobLine[4:]+"'\n    namespaces: {search: view}\n", t0.Add(time.Second))
	if _, ok := f.Check("alice", "secret"); ok {
		t.Fatal("the old password still passes after the reload")
	}
	u, ok = f.Check("alice", "hunter2")
	if !ok || u.Namespaces["pay"] != "" {
		t.Fatalf("alice after the reload: %+v, %v", u, ok)
	}
	if _, ok := f.Lookup("bob"); ok {
		t.Fatal("bob was removed")
	}
	// A broken version is refused: the last good one stays.
	writeUsers(t, path, "users: [ {name: alice, password: plain} ]\n", t0.Add(2*time.Second))
	if _, ok := f.Check("alice", "hunter2"); !ok {
		t.Fatal("a bad file replaced the good one")
	}
}

func TestParseUsersRefusesBadEntries(t *testing.T) {
	for name, body := range map[string]string{
		"plain password": "users:\n  - {name: a, password: secret}\n",
		"bad role":       "users:\n  - {name: a, password: '" + aliceHash + "', namespaces: {pay: admin}}\n",
		"bad namespace":  "users:\n  - {name: a, password: '" + aliceHash + "', namespaces: {Pay: edit}}\n",
		"twice":          "users:\n  - {name: a, password: '" + aliceHash + "'}\n  - {name: a, password: '" + aliceHash + "'}\n",
		"reserved":       "users:\n  - {name: admin, password: '" + aliceHash + "'}\n",
		"unknown field":  "users:\n  - {name: a, password: '" + aliceHash + "', role: edit}\n",
		"no name":        "users:\n  - {password: '" + aliceHash + "'}\n",
	} {
		if _, err := ParseUsers([]byte(body), "admin"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := OpenUsersFile(filepath.Join(t.TempDir(), "missing.yaml"), nil); err == nil {
		t.Error("a missing file at start is accepted")
	}
}
