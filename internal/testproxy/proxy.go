package testproxy

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
)

// Mode is what a Proxy does with connections.
type Mode int

const (
	Forward Mode = iota // pass bytes both ways
	Refuse              // close new connections at once (the database is down)
	Hang                // accept and never answer (the database hangs)
)

// Proxy is a TCP proxy on 127.0.0.1 in front of a target address.
type Proxy struct {
	target string
	ln     net.Listener

	mu    sync.Mutex
	mode  Mode
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
	cut   *cutAt // armed by CutAt
}

// cutAt drops every connection when the client has sent pattern the n-th time.
type cutAt struct {
	pattern []byte
	n, seen int
	done    chan struct{}
}

// NewProxy starts a proxy to target; it stops at cleanup.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Set switches the mode. Leaving Forward drops every open connection.
func (p *Proxy) Set(m Mode) {
	p.mu.Lock()
	p.mode = m
	var drop []net.Conn
	if m != Forward {
		for c := range p.conns {
			drop = append(drop, c)
		}
	}
	p.mu.Unlock()
	for _, c := range drop {
		c.Close()
	}
}

func (p *Proxy) close() {
	p.ln.Close()
	p.Set(Refuse)
	p.wg.Wait()
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode == Refuse {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			c.Close()
			continue
		}
		p.mu.Lock()
		mode := p.mode
		p.mu.Unlock()
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrack(c)
			if mode == Hang {
				_, _ = io.Copy(io.Discard, c) // until the client or Set closes it
				return
			}
			p.pipe(c)
		}()
	}
}

func (p *Proxy) pipe(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	if !p.track(up) {
		up.Close()
		return
	}
	defer p.untrack(up)
	done := make(chan struct{}, 2)
	go func() { _ = p.copyUp(up, c); up.Close(); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); c.Close(); done <- struct{}{} }()
	<-done
	<-done
}

// CutAt arms the proxy to drop every open connection, instead of passing
// it on, when a client sends pattern for the n-th time (counted over every
// connection from now on): a process cut off in the middle of a sequence
// of statements, at a point the test chooses. The channel closes at the
// cut. New connections are forwarded as before.
func (p *Proxy) CutAt(pattern string, n int) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = &cutAt{pattern: []byte(pattern), n: n, done: make(chan struct{})}
	return p.cut.done
}

// copyUp passes the client's bytes to the server, cutting at CutAt's point.
func (p *Proxy) copyUp(up io.Writer, c io.Reader) error {
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if p.cutting(buf[:n]) {
				p.dropAll()
				return io.ErrClosedPipe
			}
			if _, werr := up.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if err != nil {
			return err
		}
	}
}

func (p *Proxy) cutting(chunk []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut == nil {
		return false
	}
	p.cut.seen += bytes.Count(chunk, p.cut.pattern)
	if p.cut.seen < p.cut.n {
		return false
	}
	close(p.cut.done)
	p.cut = nil
	return true
}

func (p *Proxy) dropAll() {
	p.mu.Lock()
	var drop []net.Conn
	for c := range p.conns {
		drop = append(drop, c)
	}
	p.mu.Unlock()
	for _, c := range drop {
		c.Close()
	}
}
