package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// NewRequest builds a request to url. The body is sent raw when it is a
// string or []byte, as JSON otherwise (none when nil); a request with a
// body says Content-Type: application/json.
func NewRequest(method, url string, body any) (*http.Request, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return nil, fmt.Errorf("encode the body of %s %s: %w", method, url, err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// Send sends req with client and reads the whole answer. A read error is
// returned with the status and the header.
func Send(client *http.Client, req *http.Request) (int, []byte, http.Header, error) {
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		err = fmt.Errorf("%s %s: read the body: %w", req.Method, req.URL.Path, err)
	}
	return resp.StatusCode, out, resp.Header, err
}

// API is a scheduler's HTTP API as a test calls it: a transport error fails
// the test.
type API struct {
	T      testing.TB
	Base   string // http://127.0.0.1:PORT
	Client *http.Client
	Auth   func(*http.Request) // sets the credentials; nil sends none
}

// Do sends a request (the body as NewRequest takes it) and returns the
// status and the body of the answer.
func (a API) Do(method, path string, body any) (int, []byte) {
	a.T.Helper()
	req, err := NewRequest(method, a.Base+path, body)
	if err != nil {
		a.T.Fatal(err)
	}
	if a.Auth != nil {
		a.Auth(req)
	}
	code, out, _, err := Send(a.Client, req)
	if err != nil {
		a.T.Fatalf("%s %s: %v", method, path, err)
	}
	return code, out
}

// Must is Do that fails the test unless the answer is 2xx. A write refused
// because no scheduler leads at the moment (a 503 written before anything
// was: an election under way, or a leader whose term just ended) is sent
// again after the answer's Retry-After, for up to 30 s, as a client does: a
// loaded machine can end a test's short leadership lease while it calls.
func (a API) Must(method, path string, body any) []byte {
	a.T.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, out := a.Do(method, path, body)
		if code/100 == 2 {
			return out
		}
		if code != http.StatusServiceUnavailable || !noLeader(out) || time.Now().After(deadline) {
			a.T.Fatalf("%s %s: %d %s", method, path, code, out)
		}
		time.Sleep(time.Second) // the Retry-After these answers carry
	}
}

// noLeader reports whether a 503's body says the write was refused for want
// of a leader (api/forward.go's two answers), before it was carried out.
func noLeader(body []byte) bool {
	return bytes.Contains(body, []byte("no longer the leader")) || bytes.Contains(body, []byte("no scheduler is the leader"))
}

// Role is what the scheduler says of itself in /api/operate/cluster
// (leader, standby), "" when it does not answer 200.
func (a API) Role() string {
	a.T.Helper()
	code, body := a.Do(http.MethodGet, "/api/operate/cluster", nil)
	if code != http.StatusOK {
		return ""
	}
	var v struct {
		Role string `json:"role"`
	}
	_ = json.Unmarshal(body, &v)
	return v.Role
}

// Healthy is the readiness check of a scheduler at base: GET /healthz answers 200.
func Healthy(client *http.Client, base string) func() bool {
	return func() bool {
		resp, err := client.Get(base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
}
