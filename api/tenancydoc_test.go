package api_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/identity"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store/memory"
)

var (
	// htpasswdLine is step 1's `htpasswd -nbB NAME 'PASSWORD'`.
	htpasswdLine = regexp.MustCompile(`^htpasswd -nbB (\w+) '([^']+)'`)
	// metricsCurl is a step 6 line: an anonymous status code, or a user's count of a
	// namespace's series, each with its claim after the #.
	metricsCurl = regexp.MustCompile(`^curl -s (?:-o /dev/null -w '%\{http_code\}\\n' |-u (\w+):(\S+) )http://127\.0\.0\.1:8899/metrics(?: \| grep -c '(namespace="\w+")')? +# (.*)$`)
)

// TestTenancyWorkedExampleMetrics runs step 6 of docs/tenancy.md's worked example
// ("Metrics") against the API with step 1's users file as the page writes it (its hashes
// made from the htpasswd lines' passwords): each curl line's claim, after its #, holds: the
// status without a login, and for a user's count of a namespace's series "0" (none) or
// "not 0" (some), so the page cannot drift from what the scheduler does.
func TestTenancyWorkedExampleMetrics(t *testing.T) {
	b, err := os.ReadFile("../docs/tenancy.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "## A worked example: two teams")
	if start < 0 {
		t.Fatal("docs/tenancy.md has no worked example")
	}
	example := doc[start:]
	example = example[:strings.Index(example, "\n```\n")]
	lines := strings.Split(example, "\n")

	passwords := map[string]string{}
	var users []string
	inUsers := false
	for _, l := range lines {
		if m := htpasswdLine.FindStringSubmatch(l); m != nil {
			passwords[m[1]] = m[2]
		}
		switch {
		case strings.HasPrefix(l, "cat > /etc/elasticjob/users.yaml"):
			inUsers = true
		case inUsers && l == "EOF":
			inUsers = false
		case inUsers:
			users = append(users, l)
		}
	}
	if len(users) < 2 || len(passwords) < 2 {
		t.Fatalf("found %d lines of the users file and %d passwords in the example", len(users), len(passwords))
	}
	usersFile := strings.Join(users, "\n") + "\n"
	for name, pw := range passwords {
		hash, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		usersFile = strings.ReplaceAll(usersFile, "'"+name+":$2y$05$…'", "'"+name+":"+string(hash)+"'")
	}
	h := exampleAPI(t, usersFile)

	n := 0
	for _, l := range lines {
		if !strings.HasPrefix(l, "curl -s ") || !strings.Contains(l, "/metrics") {
			continue
		}
		m := metricsCurl.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("step 6's line %q: not a shape this test runs (a status, or a user's grep -c of a namespace's series)", l)
			continue
		}
		n++
		user, pass, series, claim := m[1], m[2], m[3], m[4]
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if series == "" {
			if got := w.Code; !strings.HasPrefix(claim, strconv.Itoa(got)) {
				t.Errorf("%q: got %d", l, got)
			}
			continue
		}
		if w.Code != http.StatusOK {
			t.Errorf("%q: %d %s", l, w.Code, w.Body)
			continue
		}
		count := 0
		for _, s := range strings.Split(w.Body.String(), "\n") {
			if strings.Contains(s, series) {
				count++
			}
		}
		switch {
		case strings.HasPrefix(claim, "0"):
			if count != 0 {
				t.Errorf("%q: the page says 0, but %s reads %d of those series", l, user, count)
			}
		case strings.HasPrefix(claim, "not 0"):
			if count == 0 {
				t.Errorf("%q: the page says some, but %s reads none", l, user)
			}
		default:
			t.Errorf("%q: the claim %q is neither \"0\" nor \"not 0\"", l, claim)
		}
	}
	if n < 3 {
		t.Fatalf("ran %d of step 6's curl lines, want at least 3", n)
	}
}

// exampleAPI is the API with the example's users file (and an admin), serving a series of
// each team's and one of the operator's at /metrics, which asks for a login (teams are
// configured).
func exampleAPI(t *testing.T, usersFile string) http.Handler {
	t.Helper()
	p := filepath.Join(t.TempDir(), "users.yaml")
	if err := os.WriteFile(p, []byte(usersFile), 0o600); err != nil {
		t.Fatal(err)
	}
	uf, err := identity.OpenUsersFile(p, nil, "admin", "")
	if err != nil {
		t.Fatalf("the example's users file: %v\n%s", err, usersFile)
	}
	kv := memory.New()
	t.Cleanup(func() { kv.Close() })
	reg := registry.New(kv, registry.Options{Damage: registry.NewDamage(nil)})
	ops := &fakeOps{}
	o := api.Options{Registry: reg, Log: slog.New(slog.DiscardHandler), Live: api.Live{Ops: ops, Engine: ops},
		Auth: api.NewAuth(api.Credentials{AdminUser: "admin", AdminPassword: "admin-pw", Users: uf}, clock.NewFake(t0), reg.Tenancy())}
	o.Metrics.Gatherer = teamMetrics()
	return api.New(o)
}
