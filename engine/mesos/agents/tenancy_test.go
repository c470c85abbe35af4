package agents

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
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

// Agents served by one process (one pid address, as a simulated cluster's
// are) are read once a pass, and each is still reported.
func TestTenantWeaknessesReadsAnAddressOnce(t *testing.T) {
	var reads atomic.Int32
	weak := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reads.Add(1)
		_, _ = w.Write([]byte(`{"flags":{"isolation":"posix/cpu,posix/mem","switch_user":"false"}}`))
	}))
	t.Cleanup(weak.Close)
	pid := "slave(1)@" + strings.TrimPrefix(weak.URL, "http://")
	master := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"slaves":[{"id":"S2","hostname":"a","pid":"` + pid + `"},{"id":"S0","hostname":"a","pid":"` + pid +
			`"},{"id":"S1","hostname":"a","pid":"` + pid + `"},{"id":"S3","hostname":"b","pid":"nowhere"}]}`))
	}))
	t.Cleanup(master.Close)
	ws, err := New(master.URL).TenantWeaknesses(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, w := range ws {
		ids = append(ids, w.Agent.ID)
		if w.Agent.ID != "S3" && (!w.NoSwitchUser || w.Err != nil) {
			t.Fatalf("agent %s: %+v, want the shared state's weakness", w.Agent.ID, w)
		}
	}
	if !slices.Equal(ids, []string{"S0", "S1", "S2", "S3"}) || ws[3].Err == nil {
		t.Fatalf("weaknesses of %v (%+v), want S0-S2 weak and S3 unreadable", ids, ws)
	}
	if n := reads.Load(); n != 1 {
		t.Fatalf("the shared address was read %d times, want once", n)
	}
}
