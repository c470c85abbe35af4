package soak

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/internal/loopback"
)

// peerProxy stands in front of one etcd member's peer listener: the other
// members reach it at the proxy's address (its advertised peer URL). It
// tells the sending member of each connection from the X-PeerURLs header
// of the connection's first request (etcd's peer transport names its
// sender's advertised URLs on every stream and pipeline request), so that
// one member can be cut off from the others: its own proxy refuses
// everything (closed), and the others' refuse what it sends (blocked).
type peerProxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	closed  bool
	blocked map[string]bool // sender peer URL → refused
	conns   map[net.Conn]string
	loss    float64 // share of packets lost on lossy connections (lossStall)
	lossy   string  // sender whose connections lose packets ("*": every one)
}

func newPeerProxy(target string) (*peerProxy, error) {
	ln, err := loopback.Listen()
	if err != nil {
		return nil, err
	}
	p := &peerProxy{ln: ln, target: target, blocked: map[string]bool{}, conns: map[net.Conn]string{}}
	go p.accept()
	return p, nil
}

func (p *peerProxy) url() string { return "http://" + p.ln.Addr().String() }

// set refuses every connection (closed), or those sent by the member at
// blocked (empty: none), closing the open ones it now refuses.
func (p *peerProxy) set(closed bool, blocked string) {
	p.mu.Lock()
	p.closed = closed
	p.blocked = map[string]bool{}
	if blocked != "" {
		p.blocked[blocked] = true
	}
	var drop []net.Conn
	for c, from := range p.conns {
		if closed || p.blocked[from] {
			drop = append(drop, c)
		}
	}
	p.mu.Unlock()
	for _, c := range drop {
		c.Close()
	}
}

// setLoss makes the connections sent by the member at from ("*": every
// connection) lose this share of their packets (0: none), both ways.
func (p *peerProxy) setLoss(from string, loss float64) {
	p.mu.Lock()
	p.lossy, p.loss = from, loss
	p.mu.Unlock()
}

// stall is how long a chunk of a connection sent by from waits (lossStall).
func (p *peerProxy) stall(from string) time.Duration {
	p.mu.Lock()
	loss := p.loss
	if p.lossy != "*" && p.lossy != from {
		loss = 0
	}
	p.mu.Unlock()
	return lossStall(loss)
}

// copy forwards src to dst, each chunk after its stall.
func (p *peerProxy) copy(dst io.Writer, src io.Reader, from string) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if d := p.stall(from); d > 0 {
				time.Sleep(d)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *peerProxy) close() {
	p.ln.Close()
	p.set(true, "")
}

func (p *peerProxy) refuses(from string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed || p.blocked[from]
}

func (p *peerProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.pipe(c)
	}
}

// sender reads the connection's first request head (up to 16 KiB) and
// names the sender from its X-PeerURLs header ("" when it has none); head
// is every byte read, to forward.
func sender(c net.Conn) (from string, head []byte, err error) {
	buf := make([]byte, 0, 4096)
	chunk := make([]byte, 4096)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	for len(buf) < 16<<10 {
		n, err := c.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if i := bytes.Index(buf, []byte("\r\n\r\n")); i >= 0 {
			for _, l := range strings.Split(string(buf[:i]), "\r\n") {
				k, v, ok := strings.Cut(l, ":")
				if ok && http.CanonicalHeaderKey(strings.TrimSpace(k)) == "X-Peerurls" {
					from, _, _ = strings.Cut(strings.TrimSpace(v), ",")
				}
			}
			return from, buf, nil
		}
		if err != nil {
			return "", buf, err
		}
	}
	return "", buf, nil
}

func (p *peerProxy) pipe(c net.Conn) {
	from, head, err := sender(c)
	if err != nil || p.refuses(from) {
		c.Close()
		return
	}
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[up] = from, from
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, c)
		delete(p.conns, up)
		p.mu.Unlock()
	}()
	if p.refuses(from) { // set between the check and the tracking
		c.Close()
		up.Close()
		return
	}
	if _, err := up.Write(head); err != nil {
		c.Close()
		up.Close()
		return
	}
	done := make(chan struct{}, 2)
	go func() { p.copy(up, c, from); done <- struct{}{} }()
	go func() { p.copy(c, up, from); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	<-done
}
