package ejctl

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// unavailable is a scheduler that answers the first n calls 503 with
// Retry-After retryAfter ("": none), then 200; it keeps each call's body.
type unavailable struct {
	mu     sync.Mutex
	n      int
	after  string
	bodies []string
}

func (u *unavailable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.bodies = append(u.bodies, string(b))
	if len(u.bodies) <= u.n {
		if u.after != "" {
			w.Header().Set("Retry-After", u.after)
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"message":"no scheduler is the leader at the moment (an election is under way); retry shortly"}`))
		return
	}
	_, _ = w.Write([]byte(`{"jobName":"j"}`))
}

// retryClient is a client of srv whose waits between tries are recorded,
// not slept.
func retryClient(srv *httptest.Server, waits *[]time.Duration) *Client {
	return &Client{Base: srv.URL, HTTP: srv.Client(), Retry503For: retryUnavailableFor,
		sleep: func(_ context.Context, d time.Duration) error { *waits = append(*waits, d); return nil }}
}

// A call answered 503 (no leader at the moment, a leadership moving: the
// answer's Retry-After says when to ask again) is sent again, whole, after
// each answer's Retry-After (1 s without one), for up to Retry503For; a
// write that must not be sent twice (an unkeyed trigger) is not, and no
// other error is.
func TestClientRetries503PerRetryAfter(t *testing.T) {
	u := &unavailable{n: 2, after: "3"}
	srv := httptest.NewServer(u)
	defer srv.Close()
	var waits []time.Duration
	c := retryClient(srv, &waits)
	var out struct {
		JobName string `json:"jobName"`
	}
	if err := c.sendJSON(context.Background(), http.MethodPost, "/api/job/register", map[string]any{"jobName": "j"}, &out); err != nil {
		t.Fatalf("register after two 503: %v", err)
	}
	if out.JobName != "j" || !slices.Equal(waits, []time.Duration{3 * time.Second, 3 * time.Second}) {
		t.Errorf("answer %+v after waits %v, want j after 3 s twice", out, waits)
	}
	if len(u.bodies) != 3 || u.bodies[0] != `{"jobName":"j"}` || u.bodies[1] != u.bodies[0] || u.bodies[2] != u.bodies[0] {
		t.Errorf("the tries sent %q, want the same body three times", u.bodies)
	}

	// No Retry-After: a second; past Retry503For the 503 is the answer.
	u, waits = &unavailable{n: 1000}, nil
	srv2 := httptest.NewServer(u)
	defer srv2.Close()
	c = retryClient(srv2, &waits)
	err := c.get(context.Background(), "/api/job/jobs", nil, nil)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable {
		t.Fatalf("always 503: %v, want the 503", err)
	}
	if want := int(retryUnavailableFor / time.Second); len(waits) != want || waits[0] != time.Second || len(u.bodies) != want+1 {
		t.Errorf("always 503: %d tries after waits %v, want %d tries a second apart", len(u.bodies), waits, want+1)
	}

	// An unkeyed trigger is sent once: its 503 may be a try whose outcome is unknown.
	u, waits = &unavailable{n: 1, after: "1"}, nil
	srv3 := httptest.NewServer(u)
	defer srv3.Close()
	c = retryClient(srv3, &waits)
	if err := c.sendJSONOnce(context.Background(), http.MethodPost, "/api/job/trigger", map[string]any{"jobName": "j"}, nil); !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || len(u.bodies) != 1 {
		t.Errorf("unkeyed trigger: %v after %d tries, want its 503 after one", err, len(u.bodies))
	}

	// Other errors are answers at once.
	srv4 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusConflict)
		_, _ = w.Write([]byte(`{"message":"Job 'j' already existed."}`))
	}))
	defer srv4.Close()
	waits = nil
	c = retryClient(srv4, &waits)
	if err := c.sendJSON(context.Background(), http.MethodPost, "/api/job/register", map[string]any{"jobName": "j"}, nil); !errors.As(err, &ae) || ae.Status != http.StatusConflict || len(waits) != 0 {
		t.Errorf("409: %v after waits %v, want the 409 at once", err, waits)
	}
}

// A trigger with --wait (ejctl's own key) answered 503 though its try
// queued the run is sent again, and the key found used is that try's: ejctl
// follows the run rather than saying an earlier trigger used the key.
func TestWaitedTriggerSentAgainAfter503(t *testing.T) {
	var triggers atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/api/job/trigger":
			if triggers.Add(1) == 1 { // queued, but the leader's answer was lost on the way
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"message":"the leader at http://127.0.0.1:1 did not answer (EOF); retry shortly"}`))
				return
			}
			_, _ = w.Write([]byte(`{"jobName":"j","queued":false,"duplicate":true}`))
		case strings.HasPrefix(r.URL.Path, "/api/job/trigger/"):
			_, _ = w.Write([]byte(`{"jobName":"j","state":"SUCCEEDED","running":[],"shards":[{"shardingItem":0,"taskId":"t0","state":"TASK_FINISHED"}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	_, errs, code := runWith(t, map[string]string{"EJCTL_ADDR": srv.URL}, "job", "trigger", "j", "--wait", "--poll", "5ms", "--timeout", "1m")
	if code != 0 || triggers.Load() != 2 {
		t.Fatalf("exit %d after %d triggers, want 0 after 2; stderr %s", code, triggers.Load(), errs)
	}
	has(t, "stderr", errs, "job j triggered (key ejctl-")
	if strings.Contains(errs, "already used") {
		t.Errorf("the retried trigger's own key said used by an earlier trigger: %s", errs)
	}
}
