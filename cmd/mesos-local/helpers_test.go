package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/engine/mesos"
)

const waitFor = 30 * time.Second // bound on waits for the real server

var urlLine = regexp.MustCompile(`^mesos-local: listening on (http://127\.0\.0\.1:\d+)$`)

// instance is run() started in-process, as main starts it.
type instance struct {
	url    string
	cancel context.CancelFunc
	done   chan error
	stderr *syncBuffer
	once   sync.Once
	err    error
}

// start runs run() with args and waits for the URL line on stdout; the
// instance is stopped at cleanup.
func start(t *testing.T, args ...string) *instance {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	in := &instance{cancel: cancel, done: make(chan error, 1), stderr: &syncBuffer{}}
	go func() {
		err := run(ctx, args, pw, in.stderr)
		pw.Close()
		in.done <- err
	}()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case line := <-lines:
		m := urlLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("first stdout line %q, want %v; run: %v; log:\n%s", line, urlLine, in.stop(), in.stderr)
		}
		in.url = m[1]
	case <-time.After(waitFor):
		t.Fatalf("no URL line within %v; run: %v; log:\n%s", waitFor, in.stop(), in.stderr)
	}
	t.Cleanup(func() {
		if err := in.stop(); err != nil {
			t.Errorf("run returned %v after stop; log:\n%s", err, in.stderr)
		}
	})
	return in
}

// stop cancels the context (what SIGTERM does in main) and returns run's
// result. Idempotent.
func (in *instance) stop() error {
	in.once.Do(func() {
		in.cancel()
		select {
		case in.err = <-in.done:
		case <-time.After(waitFor):
			in.err = errors.New("run did not return after its context ended")
		}
	})
	return in.err
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// handler records what a scheduler client sees.
type handler struct {
	subscribed chan string
	offers     chan []engine.Offer
}

func (h *handler) Subscribed(_ context.Context, id string)                         { h.subscribed <- id }
func (h *handler) Offers(_ context.Context, o []engine.Offer)                      { h.offers <- o }
func (h *handler) Rescinded(context.Context, string)                               {}
func (h *handler) UpdateAsync(_ context.Context, _ engine.Status, done func(bool)) { done(true) }
func (h *handler) Message(context.Context, string, string, []byte)                 {}
func (h *handler) Failure(context.Context, string, string, *int32)                 {}
func (h *handler) Disconnected(context.Context, error)                             {}

// subscribe runs a scheduler client (the one the scheduler uses) against
// url until stop; it returns once the client is subscribed.
func subscribe(t *testing.T, url, frameworkID string) (h *handler, id string, stop func()) {
	t.Helper()
	h = &handler{subscribed: make(chan string, 8), offers: make(chan []engine.Offer, 8)}
	c := mesos.New(mesos.Config{URL: url, FrameworkID: frameworkID, BackoffMin: 10 * time.Millisecond,
		BackoffMax: 100 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, h) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("client Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	select {
	case id = <-h.subscribed:
	case <-time.After(waitFor):
		t.Fatalf("client did not subscribe to %s within %v", url, waitFor)
	}
	return h, id, stop
}

type frameworkState struct {
	ID     string `json:"id"`
	Active bool   `json:"active"`
}

// frameworks reads the frameworks the master holds from its /state.
func frameworks(t *testing.T, url string) map[string]bool {
	t.Helper()
	resp, err := http.Get(url + "/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Frameworks []frameworkState `json:"frameworks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, f := range st.Frameworks {
		out[f.ID] = f.Active
	}
	return out
}

// eventually polls cond against the real server until it holds or waitFor passes.
func eventually(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", waitFor, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
