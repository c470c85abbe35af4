package inproc

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// roundTripper counts the requests that went to the network.
type roundTripper struct{ n int }

func (r *roundTripper) RoundTrip(*http.Request) (*http.Response, error) {
	r.n++
	return nil, errors.New("network")
}

func client(next http.RoundTripper) *http.Client {
	return &http.Client{Transport: Transport{Next: next}}
}

// A registered host's handler answers in process: method, path, query,
// headers and body reach it; its status, headers and body come back; a
// host not registered (or no longer) goes to the network.
func TestRegisteredHostServedInProcess(t *testing.T) {
	net := &roundTripper{}
	unregister := Register("127.0.0.1:1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u, p, _ := r.BasicAuth()
		w.Header().Set("X-Got", r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery+" "+string(b)+" "+u+":"+p+" "+r.RequestURI)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, "done")
	}))
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/api/v1/scheduler?x=1", strings.NewReader("call"))
	req.SetBasicAuth("fw", "secret")
	resp, err := client(net).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || string(b) != "done" || resp.Header.Get("Content-Type") != "text/plain" ||
		resp.Header.Get("X-Got") != "POST /api/v1/scheduler?x=1 call fw:secret /api/v1/scheduler?x=1" {
		t.Fatalf("%d %q %v", resp.StatusCode, b, resp.Header)
	}
	if net.n != 0 {
		t.Fatal("a registered host's request went to the network")
	}
	if _, err := client(net).Get("http://127.0.0.1:2/"); err == nil || net.n != 1 {
		t.Fatalf("another host: %v, %d network requests", err, net.n)
	}
	unregister()
	if _, err := client(net).Get("http://127.0.0.1:1/"); err == nil || net.n != 2 {
		t.Fatalf("after unregister: %v, %d network requests", err, net.n)
	}
}

// A handler that flushes streams: the client reads each event as it is
// written, before the handler returns; closing the body ends the
// handler's request context and fails its next write.
func TestStreamEndsWhenBodyClosed(t *testing.T) {
	events := make(chan string)
	ended := make(chan error, 1)
	defer Register("127.0.0.1:3", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/recordio")
		rc := http.NewResponseController(w)
		if err := rc.Flush(); err != nil {
			ended <- err
			return
		}
		for {
			select {
			case <-r.Context().Done():
				ended <- r.Context().Err()
				return
			case e := <-events:
				if _, err := io.WriteString(w, e+"\n"); err != nil {
					ended <- err
					return
				}
				_ = rc.Flush()
			}
		}
	}))()
	resp, err := client(&roundTripper{}).Get("http://127.0.0.1:3/stream")
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("Content-Type") != "application/recordio" || resp.ContentLength != -1 {
		t.Fatalf("stream response %v %d", resp.Header, resp.ContentLength)
	}
	rd := bufio.NewReader(resp.Body)
	for _, e := range []string{"one", "two"} {
		events <- e
		if l, err := rd.ReadString('\n'); err != nil || l != e+"\n" {
			t.Fatalf("read %q %v, want %s", l, err, e)
		}
	}
	_ = resp.Body.Close()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("handler ended with %v, want its context canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler outlived the closed body")
	}
}

// A request given up (its context canceled) while the handler is still
// at work returns the context's error, and the handler's later writes,
// streamed or not, do not block.
func TestRequestGivenUpReleasesHandler(t *testing.T) {
	release, ended := make(chan struct{}), make(chan struct{})
	defer Register("127.0.0.1:4", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(ended)
		<-release
		w.(http.Flusher).Flush()
		_, _ = io.WriteString(w, strings.Repeat("x", 1<<16))
	}))()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:4/", nil)
	errc := make(chan error, 1)
	go func() {
		_, err := client(&roundTripper{}).Do(req)
		errc <- err
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("given-up request: %v", err)
	}
	close(release)
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler blocked writing a response nobody reads")
	}
}

// A handler that panics fails the request, as a server closing the
// connection does, and the process goes on.
func TestHandlerPanicFailsRequest(t *testing.T) {
	defer Register("127.0.0.1:5", http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))()
	if _, err := client(&roundTripper{}).Get("http://127.0.0.1:5/"); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("panicking handler: %v", err)
	}
}
