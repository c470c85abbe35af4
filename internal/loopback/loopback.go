// Package loopback hands out loopback TCP ports for the processes a test
// starts, never the same one twice, in this process or in another test
// binary running beside it.
//
// A port found free is closed again until the process it is for binds
// it. In that gap another socket must not take it, so the ports come from
// a pool the kernel never hands out by itself: below its ephemeral range
// (ip_local_port_range, 32768 and up by default), where every outgoing
// connection and every listener on port 0 get their ports. The pool also
// stays under the 20000–32767 that scripts/services.sh takes its servers'
// ports from (ZooKeeper comes back on its own port after a restart) and
// above the kubelet's and the control plane's 10248–10259.
//
// Test binaries run side by side, each with its own memory: a port is
// reserved for all of them by an abstract Unix socket named after it,
// which the kernel releases when the process that holds it exits.
package loopback

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
)

const (
	poolLow  = 11000
	poolHigh = 20000 // exclusive
)

var handedOut = newPool(poolLow, ephemeralBelow(poolHigh), "ejcloud-loopback-port-")

// ephemeralBelow is hi, lowered to where the kernel's ephemeral range
// starts when that is lower and leaves a thousand ports in the pool.
func ephemeralBelow(hi int) int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return hi
	}
	var lo int
	if _, err := fmt.Sscan(string(b), &lo); err == nil && lo < hi && lo-poolLow >= 1000 {
		return lo
	}
	return hi
}

// pool hands out ports in [lo, hi): each at most once per process, and
// while this process lives, not to another process using the same prefix.
type pool struct {
	mu     sync.Mutex
	lo, hi int
	prefix string
	taken  map[int]bool
	held   []net.Listener // the reservations, kept until the process exits
}

func newPool(lo, hi int, prefix string) *pool {
	return &pool{lo: lo, hi: hi, prefix: prefix, taken: map[int]bool{}}
}

// reserve takes port for this process; false when another process (or
// this one) holds it.
func (p *pool) reserve(port int) bool {
	ln, err := net.Listen("unix", "@"+p.prefix+strconv.Itoa(port))
	if err != nil {
		return false
	}
	p.held = append(p.held, ln)
	return true
}

// pick reserves n consecutive ports, none handed out before, for which
// use succeeds on the first; it returns the first.
func (p *pool) pick(n int, use func(first int) bool) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range 2000 {
		first := p.lo + rand.IntN(p.hi-p.lo-n+1)
		ok := true
		for i := range n {
			if p.taken[first+i] {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		// Each port tried is spent, reserved or not: it may be another
		// process's, or bound by something outside the pool's users.
		for i := range n {
			p.taken[first+i] = true
			if ok && !p.reserve(first+i) {
				ok = false
			}
		}
		if ok && use(first) {
			return first, nil
		}
	}
	return 0, fmt.Errorf("loopback: no %d free port(s) in %d–%d", n, p.lo, p.hi-1)
}

// free reports whether port can be listened on now.
func free(port int) bool {
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// Port is a loopback port free a moment ago, for a process to bind.
func Port() (int, error) {
	return handedOut.pick(1, free)
}

// Pair is a free port whose next port is free too (etcd's client and
// peer ports).
func Pair() (int, error) {
	return handedOut.pick(2, func(p int) bool { return free(p) && free(p+1) })
}

// Listen listens on a port from the same pool, for a server in this
// process (one a proxy may close and open again on the same port).
func Listen() (net.Listener, error) {
	var ln net.Listener
	_, err := handedOut.pick(1, func(p int) bool {
		var err error
		ln, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	return ln, nil
}
