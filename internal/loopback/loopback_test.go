package loopback

import (
	"fmt"
	"net"
	"os"
	"testing"
)

// testPrefix keeps a test's reservations apart from the package's own
// pool and from other runs of this test beside it.
func testPrefix(t *testing.T) string {
	return fmt.Sprintf("ejcloud-loopback-test-%d-%s-", os.Getpid(), t.Name())
}

func TestPortNeverTheSameTwice(t *testing.T) {
	seen := map[int]bool{}
	for range 50 {
		p, err := Port()
		if err != nil {
			t.Fatal(err)
		}
		ln, err := Listen()
		if err != nil {
			t.Fatal(err)
		}
		q := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if seen[p] || seen[q] || p == q {
			t.Fatalf("port handed out twice: %d, %d", p, q)
		}
		seen[p], seen[q] = true, true
	}
}

// A port handed out is closed until its process binds it. The kernel
// gives outgoing connections and listeners on port 0 ports of its
// ephemeral range, so one from there could be taken in between (a
// scheduler in a test then failed with "address already in use").
func TestPortsOutsideTheEphemeralRange(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skip("no ip_local_port_range:", err)
	}
	var lo, hi int
	if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil {
		t.Fatalf("ip_local_port_range %q: %v", b, err)
	}
	for range 20 {
		p, err := Port()
		if err != nil {
			t.Fatal(err)
		}
		q, err := Pair()
		if err != nil {
			t.Fatal(err)
		}
		for _, port := range []int{p, q, q + 1} {
			if port >= lo && port <= hi {
				t.Fatalf("port %d in the ephemeral range %d–%d", port, lo, hi)
			}
		}
	}
}

// Another test binary's pool, beside this one, never gets a port this
// one handed out, and a port something listens on is not handed out.
func TestPoolsShareReservations(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().(*net.TCPAddr).Port
	prefix := testPrefix(t)
	// Three ports: one already listened on, two free (if not, the test
	// cannot judge and skips).
	base := busy
	if !free(base+1) || !free(base+2) {
		t.Skipf("ports %d and %d not both free", base+1, base+2)
	}
	a := newPool(base, base+3, prefix)
	b := newPool(base, base+3, prefix)
	got := map[int]bool{}
	for _, p := range []*pool{a, b} {
		port, err := p.pick(1, free)
		if err != nil {
			t.Fatal(err)
		}
		if port == busy {
			t.Fatalf("handed out %d, which a listener holds", busy)
		}
		if got[port] {
			t.Fatalf("port %d handed out by two pools", port)
		}
		got[port] = true
	}
	// Both free ports are reserved now: a third pool finds none.
	c := newPool(base, base+3, prefix)
	if port, err := c.pick(1, free); err == nil {
		t.Fatalf("a third pool got %d, every port reserved or busy", port)
	}
	for _, p := range []*pool{a, b, c} {
		for _, r := range p.held {
			r.Close()
		}
	}
}

// Pair's two ports are free and reserved together.
func TestPairReservesBoth(t *testing.T) {
	prefix := testPrefix(t)
	a := newPool(poolLow, poolHigh, prefix)
	p, err := a.pick(2, func(p int) bool { return free(p) && free(p+1) })
	if err != nil {
		t.Fatal(err)
	}
	for _, port := range []int{p, p + 1} {
		if newPool(port, port+1, prefix).reserve(port) {
			t.Fatalf("port %d of the pair not reserved", port)
		}
	}
	for _, r := range a.held {
		r.Close()
	}
}
