//go:build e2e

package ha

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// A TCP proxy the test puts between one scheduler and ZooKeeper or
// mesos-local. Cutting its gate is a network partition: bytes already read
// are held, nothing more is delivered either way, connections stay open
// and new ones are accepted but not connected onwards, as when packets are
// dropped; healing delivers what was held, like TCP retransmitting once the
// network is back (data for a peer that closed meanwhile is lost). The
// proxy also shows each byte stream, as delivered, to an observer, which is
// how the tests see what a deposed leader sent.
//
// This rather than network namespaces: a proxy needs no root, no iptables
// and no veth addresses (everything stays on 127.0.0.1), cuts and heals at
// an instant the test chooses, and its observers attribute every request to
// the one scheduler behind it.

// gate is a cut that several proxies share.
type gate struct {
	mu     sync.Mutex
	cut    bool
	healed chan struct{} // closed while not cut
}

func newGate() *gate {
	g := &gate{healed: make(chan struct{})}
	close(g.healed)
	return g
}

// Cut stops all traffic through the gate's proxies.
func (g *gate) Cut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.cut {
		g.cut, g.healed = true, make(chan struct{})
	}
}

// Heal lets traffic through again.
func (g *gate) Heal() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cut {
		g.cut = false
		close(g.healed)
	}
}

func (g *gate) wait(done <-chan struct{}) {
	g.mu.Lock()
	ch := g.healed
	g.mu.Unlock()
	select {
	case <-ch:
	case <-done:
	}
}

// observer sees one connection's two byte streams as they are delivered.
type observer func(conn int) (toServer, toClient io.WriteCloser)

type proxy struct {
	ln       net.Listener
	upstream string
	gate     *gate
	observe  observer
	done     chan struct{}
	wg       sync.WaitGroup

	mu    sync.Mutex
	next  int
	conns map[net.Conn]bool
}

// startProxy listens on a free loopback port and forwards to upstream
// until the test ends.
func startProxy(t testing.TB, upstream string, g *gate, obs observer) *proxy {
	t.Helper()
	ln := harness.Listen(t) // not a port handed out to a process not started yet
	p := &proxy{ln: ln, upstream: upstream, gate: g, observe: obs, done: make(chan struct{}), conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) close() {
	close(p.done)
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		c.Close()
		return false
	default:
	}
	p.conns[c] = true
	return true
}

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			return
		}
		p.mu.Lock()
		id := p.next
		p.next++
		p.mu.Unlock()
		p.wg.Add(1)
		go p.handle(id, c)
	}
}

func (p *proxy) handle(id int, c net.Conn) {
	defer p.wg.Done()
	p.gate.wait(p.done) // a connection made during a cut goes nowhere until it heals
	u, err := net.Dial("tcp", p.upstream)
	if err != nil || !p.track(u) {
		c.Close()
		return
	}
	var toServer, toClient io.WriteCloser
	if p.observe != nil {
		toServer, toClient = p.observe(id)
	}
	p.wg.Add(1)
	go func() { defer p.wg.Done(); p.pump(c, u, toServer) }()
	p.pump(u, c, toClient)
}

// pump copies src to dst through the gate; the end of either direction
// (once the gate lets it through) closes both.
func (p *proxy) pump(src, dst net.Conn, obs io.WriteCloser) {
	defer func() {
		src.Close()
		dst.Close()
		if obs != nil {
			obs.Close()
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.gate.wait(p.done)
			if obs != nil {
				_, _ = obs.Write(buf[:n])
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			p.gate.wait(p.done)
			return
		}
	}
}

// streamParser runs parse on a byte stream fed through Write, in a
// goroutine of its own; a parse error stops the observation, never the
// proxy.
func streamParser(parse func(r io.Reader)) io.WriteCloser {
	pr, pw := io.Pipe()
	go func() {
		parse(pr)
		pr.CloseWithError(io.ErrClosedPipe) // later writes fail fast
	}()
	return pw
}

// proxies is one scheduler's way out: a proxy per ZooKeeper server and one
// to mesos-local, behind one gate, with what went through them.
type proxies struct {
	gate  *gate
	zk    []*proxy
	mesos *proxy
	zkRec *zkRecorder
	msRec *mesosRecorder
}

func startProxies(t testing.TB, zkServers, mesosURL string) *proxies {
	t.Helper()
	ps := &proxies{gate: newGate(), zkRec: &zkRecorder{}, msRec: &mesosRecorder{}}
	for _, s := range strings.Split(zkServers, ",") {
		ps.zk = append(ps.zk, startProxy(t, s, ps.gate, ps.zkRec.observe))
	}
	ps.mesos = startProxy(t, strings.TrimPrefix(mesosURL, "http://"), ps.gate, ps.msRec.observe)
	return ps
}

// opts routes an instance through the proxies.
func (ps *proxies) opts() instOpts {
	var zk []string
	for _, p := range ps.zk {
		zk = append(zk, p.addr())
	}
	return instOpts{zk: strings.Join(zk, ","), mesos: "http://" + ps.mesos.addr()}
}
