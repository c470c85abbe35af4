package loopback

import (
	"net"
	"testing"
)

// fakeListener is a listener at a given port that binds nothing.
type fakeListener struct {
	port   int
	closed *[]int
}

func (l fakeListener) Accept() (net.Conn, error) { return nil, net.ErrClosed }
func (l fakeListener) Close() error              { *l.closed = append(*l.closed, l.port); return nil }
func (l fakeListener) Addr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: l.port}
}

// The kernel may give a listener on port 0 a port found free and handed
// out a moment before (a peer proxy could take another member's peer
// port): listenNew skips it, holding it bound until a new one comes.
func TestListenNewSkipsAPortHandedOutBefore(t *testing.T) {
	ps := ports{taken: map[int]bool{}}
	var closed []int
	kernel := []int{40001, 40001, 40001, 40002}
	listen := func() (net.Listener, error) {
		p := kernel[0]
		kernel = kernel[1:]
		return fakeListener{port: p, closed: &closed}, nil
	}
	first, err := ps.listenNew(listen)
	if err != nil {
		t.Fatal(err)
	}
	first.Close() // a free port: closed until its process binds it
	second, err := ps.listenNew(listen)
	if err != nil {
		t.Fatal(err)
	}
	if got := second.Addr().(*net.TCPAddr).Port; got != 40002 {
		t.Fatalf("second listener on %d, want 40002 (40001 was handed out)", got)
	}
	if len(closed) != 3 || closed[1] != 40001 || closed[2] != 40001 {
		t.Fatalf("closed %v, want the first and the two refused listeners on 40001", closed)
	}
	if ps.take(40002) || !ps.take(40003) {
		t.Fatal("take: 40002 was handed out, 40003 not")
	}
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
