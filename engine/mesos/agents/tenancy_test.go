package agents

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

func TestMissingIsolators(t *testing.T) {
	for flag, want := range map[string][]string{
		"":                    {"filesystem/linux", "namespaces/pid"},
		"posix/cpu,posix/mem": {"filesystem/linux", "namespaces/pid"},
		"cgroups/cpu,cgroups/mem,filesystem/linux":     {"namespaces/pid"},
		"filesystem/linux, namespaces/pid,cgroups/cpu": nil,
	} {
		if got := MissingIsolators(flag); !slices.Equal(got, want) {
			t.Errorf("MissingIsolators(%q) = %v, want %v", flag, got, want)
		}
	}
}

// TestTenantWeaknesses: each agent's /state flags are read (with the framework
// credential); an agent without namespaces/pid and filesystem/linux, or with
// --switch_user=false, is listed, one that isolates is not.
func TestTenantWeaknesses(t *testing.T) {
	authed := func(body string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != "ej" || p != "s3cret" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			_, _ = w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	good := authed(`{"flags":{"isolation":"cgroups/cpu,cgroups/mem,filesystem/linux,namespaces/pid","switch_user":"true"}}`)
	weak := authed(`{"flags":{"isolation":"posix/cpu,posix/mem","switch_user":"false"}}`)
	pid := func(s *httptest.Server) string { return "slave(1)@" + strings.TrimPrefix(s.URL, "http://") }
	master := authed(`{"slaves":[{"id":"S1","hostname":"a","pid":"` + pid(good) + `"},{"id":"S0","hostname":"b","pid":"` + pid(weak) + `"}]}`)
	c := New(master.URL)
	c.Principal, c.Secret = "ej", "s3cret"
	ws, err := c.TenantWeaknesses(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 1 || ws[0].Agent.ID != "S0" || !slices.Equal(ws[0].Missing, TenantIsolators) || !ws[0].NoSwitchUser {
		t.Fatalf("weaknesses %+v", ws)
	}
	if s := ws[0].String(); !strings.Contains(s, "filesystem/linux,namespaces/pid") || !strings.Contains(s, "switch_user") {
		t.Errorf("message %q", s)
	}
}
