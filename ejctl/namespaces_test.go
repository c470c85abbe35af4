package ejctl

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/identity"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"golang.org/x/crypto/bcrypt"
)

// alice edits pay, bob edits search (hashes from `htpasswd -nbB`).
const nsUsers = `users:
  - {name: alice, password: '$2y$05$QTtPKarYJQKa6Rf.zXEmKeXox3z2FIMuqwm4L5IwxuZW22NrJgAGG', namespaces: {pay: edit}}
  - {name: bob, password: '$2y$05$775ogPsIQk6GuRP9SjwQq.60fB2IJJUJ78HpzhbvfsKcfpqvjKNCm', namespaces: {search: edit}}
`

// -n picks the namespace of every call; the config file keeps a default
// (ns use); a namespace API token made with ejctl acts in its namespace.
func TestNamespaces(t *testing.T) {
	dir := t.TempDir()
	users := filepath.Join(dir, "users.yaml")
	if err := os.WriteFile(users, []byte(nsUsers), 0o600); err != nil {
		t.Fatal(err)
	}
	uf, err := identity.OpenUsersFile(users, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := newTestServer(t, api.Credentials{AdminUser: "root", AdminPassword: "s3cret", Users: uf})
	ctx := context.Background()
	for _, ns := range []string{"pay", "search"} {
		if _, err := s.reg.Tenancy().PutNamespace(ctx, namespace.Record{Name: ns}); err != nil {
			t.Fatal(err)
		}
		a := app.Default()
		a.AppName, a.AppURL, a.BootstrapScript = "etl", "http://h/a.tgz", "bin/start.sh"
		if err := s.reg.In(ns).Config().AddApp(ctx, a); err != nil {
			t.Fatal(err)
		}
		j := jobs.Default()
		j.JobName, j.AppName, j.Description = "nightly_"+ns, "etl", "of "+ns
		if err := s.reg.In(ns).Config().AddJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	r := s.cli(t)
	r.env["EJCTL_CONFIG"] = filepath.Join(dir, "ejctl.json")
	r.stdin = "secret\n"
	r.must(0, "login", "-u", "alice", "--password-stdin")
	out, _ := r.must(0, "-n", "pay", "job", "ls")
	has(t, "pay's jobs", out, "nightly_pay")
	if strings.Contains(out, "nightly_search") {
		t.Fatalf("pay's list shows search's job:\n%s", out)
	}
	_, errs, code := r.do("-n", "search", "job", "ls")
	if code != 1 || !strings.Contains(errs, "no role in namespace 'search'") {
		t.Fatalf("alice in search: exit %d: %s", code, errs)
	}
	out, _ = r.must(0, "whoami", "-n", "pay")
	has(t, "whoami", out, "in namespace pay edit")
	out, _ = r.must(0, "ns", "ls")
	has(t, "ns ls", out, "pay", "edit")
	if strings.Contains(out, "search") {
		t.Fatalf("alice lists search:\n%s", out)
	}
	// The config file's default namespace.
	r.must(0, "ns", "use", "pay")
	out, _ = r.must(0, "job", "ls")
	has(t, "job ls in the default namespace of the config", out, "nightly_pay")
	// A token for CI, made with ejctl, used with --token.
	tok, _ := r.must(0, "token", "create", "ci", "--role", "edit")
	tok = strings.TrimSpace(tok)
	if !strings.HasPrefix(tok, "ejn_") {
		t.Fatalf("token %q", tok)
	}
	ci := s.cli(t)
	ci.must(0, "--token", tok, "-n", "pay", "job", "trigger", "nightly_pay")
	// Without -n the token acts in its one namespace, as login picks.
	out, _ = ci.must(0, "--token", tok, "job", "ls")
	has(t, "job ls with a namespace token and no -n", out, "nightly_pay")
	if _, _, code := ci.do("--token", tok, "-n", "search", "job", "ls"); code != 1 {
		t.Fatal("the pay token reads search")
	}
	out, _ = r.must(0, "token", "ls")
	has(t, "token ls", out, "ci", "edit", "alice")
	if strings.Contains(out, tok[20:]) {
		t.Fatal("token ls shows the secret")
	}
	id := strings.Split(tok, "_")[1]
	r.must(0, "token", "revoke", id)
	if _, _, code := ci.do("--token", tok, "-n", "pay", "job", "ls"); code != 1 {
		t.Fatal("a revoked token works")
	}
	// The admin creates and deletes a namespace.
	adm := s.cli(t)
	adm.env["EJCTL_CONFIG"] = filepath.Join(dir, "admin.json")
	adm.stdin = "s3cret\n"
	adm.must(0, "login", "-u", "root", "--password-stdin")
	out, _ = adm.must(0, "ns", "create", "ops", "--limit-cpu", "4", "--limit-mem", "4096", "--weight", "2")
	has(t, "ns create", out, "limit 4 CPU / 4096 MB", "weight 2")
	// set changes what its flags name and keeps the rest; --replace
	// replaces the record whole.
	out, _ = adm.must(0, "ns", "set", "ops", "--weight", "3")
	has(t, "ns set --weight", out, "limit 4 CPU / 4096 MB", "weight 3")
	out, _ = adm.must(0, "ns", "set", "ops", "--guarantee-cpu", "1", "--limit-mem", "2048")
	has(t, "ns set --guarantee-cpu", out, "guarantee 1 CPU / 0 MB", "limit 4 CPU / 2048 MB", "weight 3")
	// The host caps: each flag sets its own, the others kept; default
	// gives one back to the scheduler's setting.
	out, _ = adm.must(0, "ns", "set", "ops", "--pids-max", "500", "--disk-cap", "0")
	has(t, "ns set --pids-max", out, "caps pids 500, memory default, disk none", "limit 4 CPU / 2048 MB", "weight 3")
	out, _ = adm.must(0, "ns", "set", "ops", "--mem-cap", "1024")
	has(t, "ns set --mem-cap", out, "caps pids 500, memory 1024 MB, disk none")
	out, _ = adm.must(0, "ns", "set", "ops", "--pids-max", "default")
	has(t, "ns set --pids-max default", out, "caps pids default, memory 1024 MB, disk none")
	if _, errs, code := adm.do("ns", "set", "ops", "--pids-max", "-3"); code != 1 || !strings.Contains(errs, "--pids-max \"-3\": give a number") {
		t.Fatalf("a negative cap: exit %d: %s", code, errs)
	}
	if _, errs, code := adm.do("ns", "set", "ops", "--pids-max", "99999999"); code != 1 || !strings.Contains(errs, "caps.pidsMax must be from 0") {
		t.Fatalf("a cap past the bound: exit %d: %s", code, errs)
	}
	out, _ = adm.must(0, "ns", "set", "ops", "--clusters", "k8s-prod,mesos-dc1")
	has(t, "ns set --clusters", out, "limit 4 CPU / 2048 MB", "weight 3", "clusters k8s-prod,mesos-dc1")
	out, _ = adm.must(0, "ns", "set", "ops", "--weight", "4")
	has(t, "ns set --weight keeps the clusters", out, "weight 4", "clusters k8s-prod,mesos-dc1")
	out, _ = adm.must(0, "ns", "set", "ops", "--clusters", "")
	has(t, "ns set --clusters ''", out, "weight 4", "clusters -")
	out, _ = adm.must(0, "ns", "set", "ops", "--replace", "--limit-cpu", "2")
	has(t, "ns set --replace", out, "guarantee -", "limit 2 CPU / 0 MB", "weight 1", "caps pids default, memory default, disk default")
	if _, errs, code := adm.do("ns", "set", "nope", "--weight", "2"); code != 1 || !strings.Contains(errs, "no namespace nope (ejctl ns create nope makes it)") {
		t.Fatalf("ns set of a missing namespace: exit %d: %s", code, errs)
	}
	_, errs, code = adm.do("ns", "rm", "pay")
	if code != 1 || !strings.Contains(errs, "holds 1 app (etl), 1 job (nightly_pay)") {
		t.Fatalf("ns rm pay: exit %d: %s", code, errs)
	}
	adm.must(0, "ns", "rm", "ops")
}

// login picks the user's only namespace when the current one gives no
// role (issue 57 item 5: bob, a role in search only, logged in and got
// 403 from job ls in default).
func TestLoginPicksTheOnlyNamespace(t *testing.T) {
	dir := t.TempDir()
	users := filepath.Join(dir, "users.yaml")
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	file := "users:\n  - {name: bob, password: '" + string(hash) + "', namespaces: {search: edit}}\n" +
		"  - {name: carol, password: '" + string(hash) + "', namespaces: {search: view, pay: edit}}\n"
	if err := os.WriteFile(users, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	uf, err := identity.OpenUsersFile(users, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := newTestServer(t, api.Credentials{AdminUser: "root", AdminPassword: "s3cret", Users: uf})
	ctx := context.Background()
	if _, err := s.reg.Tenancy().PutNamespace(ctx, namespace.Record{Name: "search"}); err != nil {
		t.Fatal(err)
	}
	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript = "etl", "http://h/a.tgz", "bin/start.sh"
	if err := s.reg.In("search").Config().AddApp(ctx, a); err != nil {
		t.Fatal(err)
	}
	r := s.cli(t)
	r.env["EJCTL_CONFIG"] = filepath.Join(dir, "ejctl.json")
	r.stdin = "secret\n"
	out, _ := r.must(0, "login", "-u", "bob", "--password-stdin")
	has(t, "login", out, "namespace search (your only one) is now ejctl's default")
	out, _ = r.must(0, "app", "ls")
	has(t, "app ls after login", out, "etl")
	// Named explicitly, the namespace is kept, and login says what to do.
	r.stdin = "secret\n"
	out, _ = r.must(0, "login", "-u", "bob", "--password-stdin", "-n", "default")
	has(t, "login -n default", out, "you have no role in namespace default", "ejctl ns use search")
	// With several namespaces, login names them.
	c := s.cli(t)
	c.env["EJCTL_CONFIG"] = filepath.Join(dir, "carol.json")
	c.stdin = "secret\n"
	out, _ = c.must(0, "login", "-u", "carol", "--password-stdin")
	has(t, "carol's login", out, "you have no role in namespace default", "ejctl ns use NAME", "pay (edit)", "search (view)")
}
