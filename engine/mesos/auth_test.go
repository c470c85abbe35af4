package mesos

import (
	"bytes"
	"context"
	"encoding/base64"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func basic(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

// TestSecretSentOnEveryCall: principal and secret go as HTTP Basic on SUBSCRIBE and on calls.
func TestSecretSentOnEveryCall(t *testing.T) {
	m, c, _, sub := subscribe(t, Config{Principal: "ej", Secret: "s3cret"}, "fw-1")
	if sub.auth != basic("ej", "s3cret") {
		t.Fatalf("SUBSCRIBE Authorization = %q", sub.auth)
	}
	if fi := sub.call.GetSubscribe().GetFrameworkInfo(); fi.GetPrincipal() != "ej" {
		t.Fatalf("principal = %q", fi.GetPrincipal())
	}
	if err := c.Revive(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := m.nextCall(); got.auth != basic("ej", "s3cret") {
		t.Fatalf("REVIVE Authorization = %q", got.auth)
	}
}

func TestNoSecretNoAuthorization(t *testing.T) {
	_, _, _, sub := subscribe(t, Config{Principal: "ej"}, "fw-1")
	if sub.auth != "" {
		t.Fatalf("Authorization sent without a secret: %q", sub.auth)
	}
}

// syncBuffer is a log sink safe for the client's goroutine and the test's.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRefusedSubscribeIsRetriedSlowly: a 401 (or 403) to SUBSCRIBE is logged as an error that
// says what to check and is retried after BackoffMax, not at the fast backoff.
func TestRefusedSubscribeIsRetriedSlowly(t *testing.T) {
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			m := newFakeMaster(t)
			m.setRefuse(status)
			var logs syncBuffer
			h := newRecHandler()
			startClient(t, m, Config{Principal: "ej", Secret: "wrong", BackoffMax: 20 * time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))}, h)
			for range 2 {
				if auth := recv(t, m.refusals, "refused SUBSCRIBE"); auth != basic("ej", "wrong") {
					t.Fatalf("Authorization = %q", auth)
				}
			}
			out := logs.String()
			for _, want := range []string{"level=ERROR", "mesos_secret", "retry_in=20ms", strings.TrimSpace(http.StatusText(status))} {
				if !strings.Contains(out, want) {
					t.Errorf("log lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "wrong") {
				t.Errorf("log shows the secret:\n%s", out)
			}
		})
	}
}
