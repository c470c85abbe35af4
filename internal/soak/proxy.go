package soak

import (
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/internal/loopback"
)

// proxy is a TCP proxy on 127.0.0.1 in front of one server: it forwards,
// cuts (closes every connection and each new one at once), delays every
// chunk it forwards, or loses packets (lossStall).
type proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	delay time.Duration
	loss  float64
	conns map[net.Conn]struct{}
}

func newProxy(target string) (*proxy, error) {
	ln, err := loopback.Listen()
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.accept()
	return p, nil
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

// set changes the mode: cut, or forward with a delay (0: none); it ends
// a loss (setLoss).
func (p *proxy) set(cut bool, delay time.Duration) {
	p.mu.Lock()
	p.cut, p.delay, p.loss = cut, delay, 0
	var open []net.Conn
	if cut {
		for c := range p.conns {
			open = append(open, c)
		}
	}
	p.mu.Unlock()
	for _, c := range open {
		c.Close()
	}
}

// setLoss loses this share of the packets forwarded (0: none).
func (p *proxy) setLoss(loss float64) {
	p.mu.Lock()
	p.loss = loss
	p.mu.Unlock()
}

// lossStall is how long a chunk forwarded on a link losing this share of
// its packets waits: TCP sends a lost segment again after its
// retransmission timeout (at least 200 ms on Linux), doubling it each
// time the segment is lost again, so loss on a loopback link shows to
// both ends as stalls of 200 ms, 600 ms, 1.4 s... (a retransmission after
// 6.4 s is cut short: the connection is alive and keeps going).
func lossStall(loss float64) time.Duration {
	var d time.Duration
	for rto := 200 * time.Millisecond; rto <= 6400*time.Millisecond && loss > 0 && rand.Float64() < loss; rto *= 2 {
		d += rto
	}
	return d
}

func (p *proxy) close() {
	p.ln.Close()
	p.set(true, 0)
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.cut
		p.mu.Unlock()
		if cut {
			c.Close()
			continue
		}
		go p.pipe(c)
	}
}

func (p *proxy) track(cs ...net.Conn) {
	p.mu.Lock()
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	p.mu.Unlock()
}

func (p *proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	for _, c := range cs {
		delete(p.conns, c)
	}
	p.mu.Unlock()
}

func (p *proxy) pipe(c net.Conn) {
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		c.Close()
		return
	}
	p.track(c, up)
	defer p.untrack(c, up)
	done := make(chan struct{}, 2)
	go func() { p.copy(up, c); done <- struct{}{} }()
	go func() { p.copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	<-done
}

func (p *proxy) copy(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			d := p.delay + lossStall(p.loss)
			p.mu.Unlock()
			if d > 0 {
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
