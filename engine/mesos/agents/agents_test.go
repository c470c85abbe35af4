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

// /slaves is read one agent at a time: other keys skipped, null as none,
// a document of another shape an error.
func TestDecodeSlaves(t *testing.T) {
	got, err := decodeSlaves(strings.NewReader(`{"recovered_slaves":[{"id":"r"}],"slaves":[{"id":"a1","hostname":"h1","pid":"slave(1)@10.0.0.1:5051"},{"id":"a2"}],"x":{"y":[1]}}`))
	if err != nil || len(got) != 2 || got[0].ID != "a1" || got[0].PID != "slave(1)@10.0.0.1:5051" || got[1].ID != "a2" {
		t.Fatalf("decodeSlaves = %+v, %v", got, err)
	}
	if got, err := decodeSlaves(strings.NewReader(`{"slaves":null}`)); err != nil || len(got) != 0 {
		t.Fatalf("null slaves: %+v, %v", got, err)
	}
	for _, bad := range []string{`[]`, `{"slaves":{}}`, `{"slaves":[{"id":1}]}`, `{"slaves":[`} {
		if _, err := decodeSlaves(strings.NewReader(bad)); err == nil {
			t.Errorf("decodeSlaves(%s): no error", bad)
		}
	}
}
