// Package inproc lets a Mesos master and a scheduler that run in one
// process talk without a socket: the embedded master registers its HTTP
// handler under the address it listens on, and the scheduler's client
// (engine/mesos) sends its requests for that address straight to the
// handler. Nothing of the API changes: the same calls, codecs, credentials
// and event stream, the same handler; what goes is the loopback
// connection (its reads, writes and polling) and HTTP/1.1's framing, a
// third of the scheduler's CPU per task when it runs its own embedded
// engine. The master still listens on its port for its executors and for
// every other client.
package inproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
)

var (
	mu      sync.RWMutex
	servers = map[string]*server{} // host:port as the server's URL names it → its handler
)

// Register serves the requests this process sends to host (host:port, as
// in the server's URL) with h, until unregister is called; a second
// registration of one host replaces the first.
func Register(host string, h http.Handler) (unregister func()) {
	mu.Lock()
	defer mu.Unlock()
	s := &server{h}
	servers[host] = s
	return func() {
		mu.Lock()
		defer mu.Unlock()
		if servers[host] == s {
			delete(servers, host)
		}
	}
}

// Serves reports whether requests for host (host:port) are served in this
// process.
func Serves(host string) bool { return lookup(host) != nil }

// server is one registration (handlers are not comparable).
type server struct{ h http.Handler }

func lookup(host string) http.Handler {
	mu.RLock()
	defer mu.RUnlock()
	if s := servers[host]; s != nil {
		return s.h
	}
	return nil
}

// Transport sends a request for a registered host to its handler in this
// process, and any other request to Next.
type Transport struct {
	Next http.RoundTripper
}

// CloseIdleConnections closes Next's idle connections.
func (t Transport) CloseIdleConnections() {
	if c, ok := t.Next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// RoundTrip runs the handler on its own goroutine, as a server would, and
// answers once the handler has returned (the whole body) or flushed (a
// stream: the body is read as the handler writes it, and closing it ends
// the handler's request context, as a client closing its connection does).
func (t Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	h := lookup(req.URL.Host)
	if h == nil || req.URL.Scheme != "http" {
		return t.Next.RoundTrip(req)
	}
	ctx, cancel := context.WithCancel(req.Context())
	sr := req.Clone(ctx)
	sr.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	sr.RequestURI = req.URL.RequestURI()
	if sr.Host == "" {
		sr.Host = req.URL.Host
	}
	sr.RemoteAddr = "in-process"
	sr.Proto, sr.ProtoMajor, sr.ProtoMinor = "HTTP/1.1", 1, 1
	if sr.Body == nil {
		sr.Body = http.NoBody
	}
	pr, pw := io.Pipe()
	w := &response{header: http.Header{}, pw: pw, streaming: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		var err error
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("inproc: handler for %s panicked: %v", req.URL.Path, p)
			}
			if req.Body != nil {
				_ = req.Body.Close()
			}
			if !w.wroteHeader {
				w.WriteHeader(http.StatusOK)
			}
			w.err = err
			_ = pw.CloseWithError(err) // a nil error: EOF
			close(done)
		}()
		h.ServeHTTP(w, sr)
	}()
	resp := &http.Response{Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Request: req}
	select {
	case <-done:
		if w.flushed { // it flushed, then returned: streamed all the same
			resp.ContentLength = -1
			resp.Body = &streamBody{Reader: io.MultiReader(bytes.NewReader(w.buf.Bytes()), pr), pr: pr, cancel: cancel}
			break
		}
		cancel()
		if w.err != nil {
			return nil, w.err
		}
		if w.sent.Get("Content-Type") == "" && w.buf.Len() > 0 { // as a server would
			w.sent.Set("Content-Type", http.DetectContentType(w.buf.Bytes()))
		}
		resp.ContentLength = int64(w.buf.Len())
		resp.Body = io.NopCloser(bytes.NewReader(w.buf.Bytes()))
	case <-w.streaming:
		resp.ContentLength = -1
		resp.Body = &streamBody{Reader: io.MultiReader(bytes.NewReader(w.buf.Bytes()), pr), pr: pr, cancel: cancel}
	case <-req.Context().Done():
		cancel()
		_ = pr.CloseWithError(req.Context().Err()) // the handler's writes fail from now on
		return nil, req.Context().Err()
	}
	resp.StatusCode, resp.Header = w.code, w.sent
	resp.Status = fmt.Sprintf("%d %s", w.code, http.StatusText(w.code))
	return resp, nil
}

// response is the handler's http.ResponseWriter. Until the handler
// returns or first flushes, only its goroutine touches the fields; the
// body is buffered until then, and written through the pipe after.
type response struct {
	header      http.Header
	sent        http.Header // the header as it was when written
	code        int
	wroteHeader bool
	buf         bytes.Buffer
	pw          *io.PipeWriter
	streaming   chan struct{} // closed at the first flush
	flushed     bool
	err         error
}

func (w *response) Header() http.Header { return w.header }

func (w *response) WriteHeader(code int) {
	if w.wroteHeader {
		return
	}
	w.wroteHeader, w.code, w.sent = true, code, w.header.Clone()
}

func (w *response) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.flushed {
		return w.buf.Write(b)
	}
	return w.pw.Write(b)
}

// FlushError answers with the header and what is buffered; the rest of
// the body streams (http.ResponseController's Flush).
func (w *response) FlushError() error {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.flushed {
		w.flushed = true
		close(w.streaming)
	}
	return nil
}

// Flush is http.Flusher's.
func (w *response) Flush() { _ = w.FlushError() }

// streamBody is a streamed response's body: closing it closes the pipe
// (the handler's next write fails) and ends the handler's context.
type streamBody struct {
	io.Reader
	pr     *io.PipeReader
	cancel context.CancelFunc
}

func (b *streamBody) Close() error {
	b.cancel()
	return b.pr.CloseWithError(errClosed)
}

var errClosed = errors.New("inproc: response body closed")
