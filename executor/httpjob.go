package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// HTTP job props and their defaults (those of ElasticJob's HTTP job).
const (
	PropHTTPURL            = "http.url"
	PropHTTPMethod         = "http.method"
	PropHTTPData           = "http.data"
	PropHTTPConnectTimeout = "http.connect.timeout.milliseconds"
	PropHTTPReadTimeout    = "http.read.timeout.milliseconds"
	PropHTTPContentType    = "http.content.type"

	defaultConnectTimeout = 3 * time.Second
	defaultReadTimeout    = 5 * time.Second
	// ShardingContextHeader carries the sharding context JSON of an HTTP job.
	ShardingContextHeader = "shardingContext"
	maxHTTPOutput         = 16 << 20 // response bytes kept in the task's stdout
	httpFailureQuote      = 256      // response bytes quoted in a failure message
)

// httpJob calls an HTTP endpoint once per run: no app download, no process.
type httpJob struct {
	read                                  time.Duration
	method, url, shown, data, contentType string
	ctxJSON                               string
	dir                                   string
	client                                *http.Client
	transport                             *http.Transport
}

var _ job = (*httpJob)(nil)

func newHTTPJob(props map[string]string, ctxJSON, dir string) (*httpJob, error) {
	u, err := url.Parse(props[PropHTTPURL])
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("HTTP job: props.%s must be an http(s) URL, got %q", PropHTTPURL, props[PropHTTPURL])
	}
	connect, err := millis(props, PropHTTPConnectTimeout, defaultConnectTimeout)
	if err != nil {
		return nil, err
	}
	read, err := millis(props, PropHTTPReadTimeout, defaultReadTimeout)
	if err != nil {
		return nil, err
	}
	dialer := &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   connect,
		ResponseHeaderTimeout: read,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       90 * time.Second,
	}
	return &httpJob{
		read: read, method: strings.ToUpper(firstOf(props[PropHTTPMethod], http.MethodGet)), url: u.String(), shown: u.Redacted(),
		data: props[PropHTTPData], contentType: props[PropHTTPContentType], ctxJSON: ctxJSON, dir: dir,
		client: &http.Client{Transport: tr}, transport: tr,
	}, nil
}

func millis(props map[string]string, key string, def time.Duration) (time.Duration, error) {
	v, ok := props[key]
	if !ok || v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("HTTP job: props.%s must be a positive number of milliseconds, got %q", key, v)
	}
	return time.Duration(n) * time.Millisecond, nil
}

// run sends the request: the sharding context in the shardingContext
// header, http.data as the body of POST, PUT and PATCH. A 2xx answer is a
// success; the response body goes to the task's stdout, a one-line summary
// to its stderr.
func (j *httpJob) run(ctx context.Context, r runReq) Outcome {
	var body io.Reader
	switch j.method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		body = strings.NewReader(j.data)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(ctx, j.method, j.url, body)
	if err != nil {
		return Outcome{State: Failed, Message: fmt.Sprintf("http %s %s: %v", j.method, j.shown, err)}
	}
	req.Header.Set(ShardingContextHeader, j.ctxJSON)
	req.Header.Set("User-Agent", "elasticjob-executor")
	if j.contentType != "" {
		req.Header.Set("Content-Type", j.contentType)
	}
	r.start()
	began := time.Now()
	resp, err := j.client.Do(req)
	if err != nil {
		return j.failed(ctx, began, "", err)
	}
	defer resp.Body.Close()
	head, n, err := j.saveBody(&timedBody{r: resp.Body, d: j.read, t: time.AfterFunc(time.Hour, func() { cancel(errReadTimeout) })})
	if errors.Is(context.Cause(ctx), errReadTimeout) {
		err = fmt.Errorf("no data for %v", j.read)
	}
	if err != nil {
		return j.failed(ctx, began, resp.Status, fmt.Errorf("reading the response: %w", err))
	}
	j.note(began, resp.Status+fmt.Sprintf(", %d bytes", n))
	if resp.StatusCode/100 != 2 {
		msg := fmt.Sprintf("http %s %s: %s", j.method, j.shown, resp.Status)
		if head != "" {
			msg += ": " + head
		}
		return Outcome{State: Failed, Message: msg}
	}
	return Outcome{State: Finished}
}

func (j *httpJob) failed(ctx context.Context, began time.Time, status string, err error) Outcome {
	if ctx.Err() != nil && !errors.Is(context.Cause(ctx), errReadTimeout) {
		j.note(began, "cancelled")
		return Outcome{State: Killed, Message: "killed"}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	j.note(began, strings.TrimSpace(status+" "+err.Error()))
	if status != "" {
		return Outcome{State: Failed, Message: fmt.Sprintf("http %s %s: %s: %v", j.method, j.shown, status, err)}
	}
	return Outcome{State: Failed, Message: fmt.Sprintf("http %s %s: %v", j.method, j.shown, err)}
}

// saveBody appends the response body (up to maxHTTPOutput bytes) to the
// task's stdout and returns its first bytes for a failure message.
func (j *httpJob) saveBody(body io.Reader) (head string, n int64, err error) {
	f, err := os.OpenFile(filepath.Join(j.dir, "stdout"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := &headBuffer{max: httpFailureQuote}
	n, err = io.Copy(io.MultiWriter(f, h), io.LimitReader(body, maxHTTPOutput))
	return strings.TrimSpace(strings.ToValidUTF8(string(h.b), "")), n, err
}

// note appends a summary line of the call to the task's stderr.
func (j *httpJob) note(began time.Time, what string) {
	f, err := os.OpenFile(filepath.Join(j.dir, "stderr"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s http %s %s: %s (%v)\n", began.UTC().Format(time.RFC3339Nano), j.method, j.shown, what,
		time.Since(began).Round(time.Microsecond))
}

func (j *httpJob) close() { j.transport.CloseIdleConnections() }

// headBuffer keeps the first max bytes written to it.
type headBuffer struct {
	b   []byte
	max int
}

func (h *headBuffer) Write(p []byte) (int, error) {
	if room := h.max - len(h.b); room > 0 {
		h.b = append(h.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// errReadTimeout ends a request whose response body stalls for longer than
// the read timeout.
var errReadTimeout = errors.New("read timeout")

// timedBody bounds every read of a response body
// (http.read.timeout.milliseconds applies to the wait for the headers and
// to each read of the body, as a socket read timeout does).
type timedBody struct {
	r io.Reader
	d time.Duration
	t *time.Timer
}

func (b *timedBody) Read(p []byte) (int, error) {
	b.t.Reset(b.d)
	n, err := b.r.Read(p)
	b.t.Stop()
	return n, err
}
