package soak

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestPeerProxyCutsOneSender: the proxy forwards requests and tells their
// sender by X-PeerURLs; blocked, one sender's requests are refused while
// another's pass; closed, every one is; set back, all pass.
func TestPeerProxyCutsOneSender(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "from "+r.Header.Get("X-PeerURLs"))
	}))
	defer up.Close()
	p, err := newPeerProxy(strings.TrimPrefix(up.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	send := func(from string) (string, error) {
		// a client of its own per request: a fresh connection each time
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		req, _ := http.NewRequest(http.MethodGet, p.url()+"/raft/stream", nil)
		req.Header.Set("X-PeerURLs", from)
		resp, err := c.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	const a, b = "http://127.0.0.1:1", "http://127.0.0.1:2"
	if got, err := send(a); err != nil || got != "from "+a {
		t.Fatalf("open: %q, %v", got, err)
	}
	p.set(false, a)
	if got, err := send(a); err == nil {
		t.Errorf("%s blocked: got %q, want a refused connection", a, got)
	}
	if got, err := send(b); err != nil || got != "from "+b {
		t.Errorf("%s blocked, %s: %q, %v", a, b, got, err)
	}
	p.set(true, "")
	if got, err := send(b); err == nil {
		t.Errorf("closed: got %q, want a refused connection", got)
	}
	p.set(false, "")
	if got, err := send(a); err != nil || got != "from "+a {
		t.Errorf("healed: %q, %v", got, err)
	}
}

// Packet loss shows as TCP retransmission stalls: none without loss, the
// whole doubling series (0.2+0.4+...+6.4 s) when every packet is lost.
func TestLossStall(t *testing.T) {
	if d := lossStall(0); d != 0 {
		t.Errorf("no loss: stall %s", d)
	}
	if d := lossStall(1); d != 12600*time.Millisecond {
		t.Errorf("all lost: stall %s, want 12.6s", d)
	}
}

// A lossy sender's connections still carry its requests (late), and the
// loss ends with setLoss(_, 0).
func TestPeerProxyLossStillForwards(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer up.Close()
	p, err := newPeerProxy(strings.TrimPrefix(up.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	p.setLoss("http://a", 0.2)
	if p.stall("http://b") != 0 {
		t.Error("another sender's connection stalls")
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	req, _ := http.NewRequest(http.MethodGet, p.url()+"/raft/stream", nil)
	req.Header.Set("X-PeerURLs", "http://a")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" {
		t.Errorf("got %q through the lossy link", b)
	}
	p.setLoss("", 0)
	if p.stall("http://a") != 0 {
		t.Error("loss not ended")
	}
}
