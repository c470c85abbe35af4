package ejctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// APIError is an error answer of the API: its status and {"message"}.
type APIError struct {
	Method, Path string
	Status       int
	Message      string
}

func (e *APIError) Error() string {
	msg := e.Message
	switch e.Status {
	case http.StatusUnauthorized:
		msg += " (log in with: ejctl login, or pass --token / EJCTL_TOKEN)"
	case http.StatusForbidden:
		msg += " (your role does not allow it in this namespace: see ejctl whoami; -n picks the namespace)"
	}
	return fmt.Sprintf("%s %s: %d %s: %s", e.Method, e.Path, e.Status, http.StatusText(e.Status), msg)
}

// IsNotFound reports a 404 answer.
func IsNotFound(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

// Client calls the scheduler's REST API.
type Client struct {
	Base  string // http://host:port
	Token string
	// Namespace is sent as ?namespace= on every call ("" or default:
	// the default namespace, as the original's calls).
	Namespace string
	HTTP      *http.Client
	Timeout   time.Duration // per call, except uploads and log follows (0: none)
	// Warn is told the text of every Warning header an answer carries
	// (the registration's "299 elasticjob …"); nil ignores them.
	Warn func(text string)
	// Retry503For bounds how long a call answered 503 is sent again, each
	// time after the answer's Retry-After (1 s without one): the scheduler
	// answers so while no leader is elected (an election, a leader that
	// lost its term under load), and for a write whose outcome it could not
	// learn (the leader did not answer). 0: never; nor is a call whose body
	// cannot be read again (a streamed upload), nor one marked once.
	Retry503For time.Duration
	// sleep waits between tries (nil: a timer).
	sleep func(context.Context, time.Duration) error
}

// request is one call.
type request struct {
	method, path string
	query        url.Values
	body         io.Reader
	length       int64 // the body's size when known (sent as Content-Length)
	contentType  string
	header       http.Header
	noTimeout    bool
	// once: not sent again after a 503, whose outcome may be unknown (the
	// leader did not answer): a second try could do the work twice (an
	// unkeyed trigger, a new backfill or token).
	once bool
	// sink, when set, takes a 2xx answer's body as a stream (downloads).
	sink func(io.Reader) error
}

// call sends a request and decodes a JSON answer into out (nil: ignore
// it); an answer outside 2xx becomes an *APIError. One answered 503 is
// sent again after its Retry-After, for up to Retry503For.
func (c *Client) call(ctx context.Context, r request, out any) error {
	var waited time.Duration
	for {
		retryAfter, err := c.try(ctx, r, out)
		if retryAfter < 0 || r.once || waited+retryAfter > c.Retry503For || !rewound(r.body) {
			return err
		}
		sleep := c.sleep
		if sleep == nil {
			sleep = sleepCtx
		}
		if sleep(ctx, retryAfter) != nil {
			return err
		}
		waited += retryAfter
	}
}

// try sends the request once: retryAfter is the wait a 503 answer asked
// for (-1: the answer was no 503).
func (c *Client) try(ctx context.Context, r request, out any) (retryAfter time.Duration, err error) {
	if !r.noTimeout && c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	req, err := c.newRequest(ctx, r)
	if err != nil {
		return -1, err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return -1, fmt.Errorf("%s %s: cannot reach the scheduler at %s: %w", r.method, r.path, c.Base, err)
	}
	defer resp.Body.Close()
	retryAfter = -1
	if resp.StatusCode == http.StatusServiceUnavailable {
		retryAfter = time.Second
		if secs, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && secs >= 0 {
			retryAfter = max(time.Duration(secs)*time.Second, minRetryWait)
		}
	}
	return retryAfter, c.answer(r, resp, out)
}

// answer reads an answer: its warnings, then its body into out or r.sink,
// or the *APIError of a status outside 2xx.
func (c *Client) answer(r request, resp *http.Response, out any) error {
	if c.Warn != nil {
		for _, w := range resp.Header.Values("Warning") {
			c.Warn(warningText(w))
		}
	}
	if r.sink != nil && resp.StatusCode/100 == 2 {
		if err := r.sink(resp.Body); err != nil {
			return fmt.Errorf("%s %s: read the answer: %w", r.method, r.path, err)
		}
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read the answer: %w", r.method, r.path, err)
	}
	if resp.StatusCode/100 != 2 {
		return apiError(r, resp.StatusCode, body)
	}
	if out == nil || len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = append((*raw)[:0], body...)
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not the expected JSON: %w", r.method, r.path, err)
	}
	return nil
}

// newRequest is r as an HTTP request: the client's namespace (unless r
// names one in its path), its token, the content type and headers.
func (c *Client) newRequest(ctx context.Context, r request) (*http.Request, error) {
	u := c.Base + r.path
	q := r.query
	if c.Namespace != "" && c.Namespace != "default" && !strings.HasPrefix(r.path, "/api/namespaces") {
		q = url.Values{}
		for k, v := range r.query {
			q[k] = v
		}
		q.Set("namespace", c.Namespace)
	}
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, r.body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	if r.length > 0 {
		req.ContentLength = r.length
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-EJ-Client", "ejctl") // where a run came from: ejctl:{user}
	return req, nil
}

// minRetryWait is the least wait before a 503 is sent again (a
// Retry-After of 0 included), so that Retry503For bounds the tries too.
const minRetryWait = 200 * time.Millisecond

// rewound puts a request's body back at its start to be sent again; false
// when it cannot be (a stream).
func rewound(body io.Reader) bool {
	if body == nil {
		return true
	}
	s, ok := body.(io.Seeker)
	if !ok {
		return false
	}
	_, err := s.Seek(0, io.SeekStart)
	return err == nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func apiError(r request, status int, body []byte) error {
	var m struct {
		Message string `json:"message"`
	}
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &m) == nil && m.Message != "" {
		msg = m.Message
	}
	if len(msg) > 2000 {
		msg = msg[:2000] + "…"
	}
	return &APIError{Method: r.method, Path: r.path, Status: status, Message: msg}
}

// get, postJSON, putJSON and del are the common shapes.
func (c *Client) get(ctx context.Context, path string, q url.Values, out any) error {
	return c.call(ctx, request{method: http.MethodGet, path: path, query: q}, out)
}

func (c *Client) sendJSON(ctx context.Context, method, path string, in, out any) error {
	return c.sendJSONAs(ctx, method, path, in, out, false)
}

// sendJSONOnce is sendJSON for a write that is never sent again after a
// 503 (request.once).
func (c *Client) sendJSONOnce(ctx context.Context, method, path string, in, out any) error {
	return c.sendJSONAs(ctx, method, path, in, out, true)
}

func (c *Client) sendJSONAs(ctx context.Context, method, path string, in, out any, once bool) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: encode: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	return c.call(ctx, request{method: method, path: path, body: body, contentType: "application/json", once: once}, out)
}

func (c *Client) del(ctx context.Context, path string) error {
	return c.call(ctx, request{method: http.MethodDelete, path: path}, nil)
}

// seg escapes one path segment (names are [A-Za-z0-9._-]; task ids hold @).
func seg(s string) string { return url.PathEscape(s) }

// warningText is the text of a Warning header (RFC 7234: code agent
// "text" [date]), or the header itself when it has another shape.
func warningText(h string) string {
	_, rest, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok {
		return h
	}
	_, quoted, ok := strings.Cut(rest, " ")
	if !ok {
		return h
	}
	if q, err := strconv.QuotedPrefix(quoted); err == nil {
		if t, err := strconv.Unquote(q); err == nil {
			return t
		}
	}
	return h
}
