package agents

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A fake master+agent serving /state as given: a real Mesos agent reports
// only flags.isolation, the embedded one adds an isolation object.
func serve(t *testing.T, agentState string) *Client {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		host := strings.TrimPrefix(srv.URL, "http://")
		body := strings.Replace(agentState, "{", `{"slaves":[{"id":"S0","pid":"slave(1)@`+host+`"}],`, 1)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return New(srv.URL)
}

func TestIsolation(t *testing.T) {
	for _, c := range []struct {
		name, state string
		want        Isolation
	}{
		{"embedded v1", `{"flags":{"isolation":"cgroups/cpu,cgroups/mem,cgroups/pids"},"isolation":{"mode":"v1","enforced":true}}`,
			Isolation{Mode: "v1", Isolators: "cgroups/cpu,cgroups/mem,cgroups/pids", Enforced: true}},
		{"embedded off", `{"flags":{"isolation":"posix/cpu,posix/mem"},"isolation":{"mode":"off","reason":"not root"}}`,
			Isolation{Mode: "off", Isolators: "posix/cpu,posix/mem", Reason: "not root"}},
		{"mesos cgroups", `{"flags":{"isolation":"cgroups/cpu,cgroups/mem,filesystem/linux"}}`,
			Isolation{Mode: "cgroups", Isolators: "cgroups/cpu,cgroups/mem,filesystem/linux", Enforced: true}},
		{"mesos default", `{"flags":{}}`, Isolation{Mode: "off", Isolators: "posix/cpu,posix/mem"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := serve(t, c.state)
			ags, err := cl.Agents(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			cl.FillIsolation(t.Context(), ags)
			if len(ags) != 1 || ags[0].Isolation == nil || *ags[0].Isolation != c.want {
				t.Fatalf("got %+v, want %+v", ags[0].Isolation, c.want)
			}
		})
	}
	ags := []Agent{{ID: "gone", PID: "slave(1)@127.0.0.1:1"}}
	New("http://127.0.0.1:1").FillIsolation(t.Context(), ags)
	if ags[0].Isolation.Mode != "unknown" || ags[0].Isolation.Reason == "" {
		t.Fatalf("unreachable agent: %+v", ags[0].Isolation)
	}
}
