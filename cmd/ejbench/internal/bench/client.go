package bench

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/promtext"
)

// Client talks to one scheduler's REST API over keep-alive connections.
type Client struct {
	Base string
	hc   *http.Client
}

// NewClient is a client of the API at base with up to conns keep-alive
// connections.
func NewClient(base string, conns int) *Client {
	tr := &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: time.Minute, DisableCompression: true}
	return &Client{Base: base, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// Close closes the idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// Do sends one request and returns the status and body (read to the end
// so the connection is reused).
func (c *Client) Do(method, path, contentType string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, c.Base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// StatusError is an answer outside 2xx.
type StatusError struct {
	Method, Path string
	Code         int
	Body         string
	// RetryAfter is what the answer's Retry-After asked for (in seconds;
	// 0: it had none, or a date).
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Code, e.Body)
}

// PostJSON posts body as JSON to path; any status but 2xx is an error, a
// *StatusError.
func (c *Client) PostJSON(path, body string) error {
	req, err := http.NewRequest(http.MethodPost, c.Base+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		se := &StatusError{Method: http.MethodPost, Path: path, Code: resp.StatusCode, Body: strings.TrimSpace(string(b))}
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
			se.RetryAfter = time.Duration(secs) * time.Second
		}
		return se
	}
	return nil
}

// Trigger triggers job once.
func (c *Client) Trigger(job string) error { return c.PostJSON("/api/job/trigger", job) }

// Healthy is whether /healthz answers 200.
func (c *Client) Healthy() bool {
	code, _, err := c.Do(http.MethodGet, "/healthz", "", nil)
	return err == nil && code == http.StatusOK
}

// Scrape reads /metrics into series → value.
func (c *Client) Scrape() (promtext.Set, error) {
	m, _, _, err := c.ScrapeAt()
	return m, err
}

// ScrapeAt is scrape, also returning when the values were read: the
// middle of the time between sending the request and the response's
// headers (the handler gathers every value before it writes a byte), and
// half that time as the reading's uncertainty. Under load a scrape of a
// large registry takes seconds; taking the time after the body arrived
// instead shifts a reading by its scrape's duration, and a 30 s rate
// between a slow and a fast scrape by several percent.
func (c *Client) ScrapeAt() (promtext.Set, time.Time, time.Duration, error) {
	req, err := http.NewRequest(http.MethodGet, c.Base+"/metrics", nil)
	if err != nil {
		return nil, time.Time{}, 0, err
	}
	sent := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, time.Time{}, 0, err
	}
	half := time.Since(sent) / 2
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, time.Time{}, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, time.Time{}, 0, fmt.Errorf("GET /metrics: %d", resp.StatusCode)
	}
	return promtext.Parse(b), sent.Add(half), half, nil
}
