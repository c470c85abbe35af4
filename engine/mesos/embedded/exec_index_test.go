package embedded

import (
	"crypto/sha256"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"
)

// unstartedCluster is a cluster that serves nothing: the test registers
// and ends its executors itself.
func unstartedCluster(tb testing.TB) *Cluster {
	tb.Helper()
	c, err := New(Config{WorkDir: tb.TempDir(), CPUs: 1, MemMB: 1024, DiskMB: 100, Ports: "[31000-31000]",
		Hostname: "index", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// liveExecutor registers executor i of fw, with token's hash (none for
// ""), recovered when an earlier version started it.
func liveExecutor(c *Cluster, fw *framework, i int, token string, recovered bool) *executor {
	e := &executor{fw: fw, agent: c.agents[0], id: fmt.Sprintf("e%d", i), dir: fmt.Sprintf("/sandboxes/%d", i),
		tasks: map[string]*task{}, persisted: persisted{recovered: recovered}}
	if token != "" {
		e.token = sha256.Sum256([]byte(token))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.register(e)
	return e
}

func endExecutor(c *Cluster, e *executor) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.executorTerminated(e, nil, "ended by the test")
}

// tokenIndexMismatch says how the live executors' token index differs from
// a scan of the live executors ("": it does not); c.mu held.
func tokenIndexMismatch(c *Cluster) string {
	want, legacy := map[tokenHash]int{}, 0
	for _, e := range c.live {
		switch {
		case e.token != (tokenHash{}):
			want[e.token]++
		case e.recovered:
			legacy++
		}
	}
	if !maps.Equal(want, c.liveTokens) || legacy != c.legacyLive {
		return fmt.Sprintf("the index holds %d tokens and %d executors without one; the %d live executors, %d tokens and %d without one",
			len(c.liveTokens), c.legacyLive, len(c.live), len(want), legacy)
	}
	return ""
}

func checkTokenIndex(t *testing.T, c *Cluster) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := tokenIndexMismatch(c); m != "" {
		t.Error(m)
	}
}

// admitted reports whether the executor API reads the body of a call with
// token ("": none); any refusal but 401 fails the test.
func admitted(t *testing.T, c *Cluster, token string) bool {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/api/v1/executor", nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	done, herr := c.executorAPI.admit(r)
	if herr != nil {
		if herr.code != http.StatusUnauthorized {
			t.Fatalf("admit: %d %s, want 401 or admitted", herr.code, herr.msg)
		}
		return false
	}
	done()
	return true
}

// TestExecutorTokenIndexFollowsExecutors: the executor API finds a call's
// token in an index of the live executors rather than scanning them all
// (10,000 live executors: BenchmarkExecutorAdmit). The index follows
// executors as they come and go: a live executor's token is admitted and
// refused (401) once it ended, a token no executor has never, and calls
// without a token only while an executor an earlier version started
// without one lives; after every step it agrees with a scan.
func TestExecutorTokenIndexFollowsExecutors(t *testing.T) {
	c := unstartedCluster(t)
	fw := &framework{id: "fw", executors: map[execKey]*executor{}, tasks: map[string]*task{}}
	var execs []*executor
	var tokens []string
	for i := range 4 {
		tok, _ := newExecutorToken()
		execs, tokens = append(execs, liveExecutor(c, fw, i, tok, false)), append(tokens, tok)
	}
	checkTokenIndex(t, c)
	for i, tok := range tokens {
		if !admitted(t, c, tok) {
			t.Errorf("executor %d's token refused while it lives", i)
		}
	}
	if admitted(t, c, "no-executor-has-this-token") || admitted(t, c, "") {
		t.Error("a call without a live executor's token admitted")
	}

	endExecutor(c, execs[1])
	checkTokenIndex(t, c)
	if admitted(t, c, tokens[1]) {
		t.Error("an ended executor's token admitted")
	}
	for _, i := range []int{0, 2, 3} {
		if !admitted(t, c, tokens[i]) {
			t.Errorf("executor %d's token refused after another ended", i)
		}
	}

	// An executor an earlier version started, without a token: calls
	// without one are read while it lives (findExecutor judges them).
	old := liveExecutor(c, fw, 10, "", true)
	checkTokenIndex(t, c)
	if !admitted(t, c, "") || !admitted(t, c, "any") {
		t.Error("a tokenless call refused while an executor without a token lives")
	}
	endExecutor(c, old)
	checkTokenIndex(t, c)
	if admitted(t, c, "") {
		t.Error("a tokenless call admitted after the last executor without a token ended")
	}

	// Ending one twice counts it out once.
	endExecutor(c, execs[0])
	endExecutor(c, execs[0])
	checkTokenIndex(t, c)
	for _, e := range execs[2:] {
		endExecutor(c, e)
	}
	checkTokenIndex(t, c)
	for i, tok := range tokens {
		if admitted(t, c, tok) {
			t.Errorf("executor %d's token admitted with no executor live", i)
		}
	}
	if len(c.liveTokens) != 0 || c.legacyLive != 0 {
		t.Errorf("the index holds %d tokens and %d executors without one with none live", len(c.liveTokens), c.legacyLive)
	}
}

// BenchmarkExecutorAdmit is the executor API's check of one call's token
// before its body is read, with 10,000 live executors.
func BenchmarkExecutorAdmit(b *testing.B) {
	c := unstartedCluster(b)
	fw := &framework{id: "fw", executors: map[execKey]*executor{}, tasks: map[string]*task{}}
	const n = 10_000
	var tok string
	for i := range n {
		t, _ := newExecutorToken()
		liveExecutor(c, fw, i, t, false)
		if i == n/2 {
			tok = t
		}
	}
	r := httptest.NewRequest(http.MethodPost, "/api/v1/executor", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	b.ReportAllocs()
	for b.Loop() {
		done, herr := c.executorAPI.admit(r)
		if herr != nil {
			b.Fatal(herr.msg)
		}
		done()
	}
}
