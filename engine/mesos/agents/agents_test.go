package agents

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// The agent list comes from the master's /slaves and is reused for
// MaxAge from the same master; MaxAge 0 reads it every time.
func TestAgentsListIsReadFromSlavesAndReused(t *testing.T) {
	var reads atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/slaves" {
			http.NotFound(w, r)
			return
		}
		reads.Add(1)
		_, _ = w.Write([]byte(`{"slaves":[{"id":"S0","hostname":"h0","active":true,"resources":{"cpus":8}}],"recovered_slaves":[]}`))
	}))
	defer srv.Close()

	c := New(srv.URL)
	for range 3 {
		ags, err := c.Agents(t.Context())
		if err != nil || len(ags) != 1 || ags[0].ID != "S0" || ags[0].Resources["cpus"] != 8.0 {
			t.Fatalf("agents %+v, %v", ags, err)
		}
		ags[0].ID = "changed by the caller" // callers get their own copy
	}
	if n := reads.Load(); n != 1 {
		t.Fatalf("%d reads of /slaves within MaxAge, want 1", n)
	}
	other := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	c.Master = func() string { return other } // another leading master: read afresh
	if ags, _ := c.Agents(t.Context()); len(ags) != 1 || ags[0].ID != "S0" || reads.Load() != 2 {
		t.Fatalf("after a master change: %+v, %d reads", ags, reads.Load())
	}
	c.MaxAge = 0
	for range 2 {
		if _, err := c.Agents(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if n := reads.Load(); n != 4 {
		t.Fatalf("%d reads with MaxAge 0, want 4", n)
	}
}
