package soak

import (
	"errors"
	"net"
	"strconv"
	"sync"
)

// handedOut are the loopback ports freePort and listenLocal gave this
// process: a port found free is closed again until its process binds it,
// and the kernel may give it meanwhile to the next listener on port 0
// (etcd seed 823: a peer proxy bound the port picked a moment before for
// another member's peers, and that member could not start).
var handedOut = ports{taken: map[int]bool{}}

type ports struct {
	sync.Mutex
	taken map[int]bool
}

// listenNew listens with listen (on a port of the kernel's choice) until
// it gets a port not handed out before, and notes it; the refused
// listeners stay bound until then, so the kernel moves on.
func (ps *ports) listenNew(listen func() (net.Listener, error)) (net.Listener, error) {
	ps.Lock()
	defer ps.Unlock()
	var held []net.Listener
	defer func() {
		for _, ln := range held {
			ln.Close()
		}
	}()
	for range 1000 {
		ln, err := listen()
		if err != nil {
			return nil, err
		}
		port := ln.Addr().(*net.TCPAddr).Port
		if !ps.taken[port] {
			ps.taken[port] = true
			return ln, nil
		}
		held = append(held, ln)
	}
	return nil, errors.New("soak: no loopback port not handed out before")
}

// take notes port as handed out; false when it was already.
func (ps *ports) take(port int) bool {
	ps.Lock()
	defer ps.Unlock()
	if ps.taken[port] {
		return false
	}
	ps.taken[port] = true
	return true
}

func listenAny() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// listenLocal listens on a loopback port no freePort handed out (to a
// process that may not have bound it yet).
func listenLocal() (net.Listener, error) { return handedOut.listenNew(listenAny) }

// freePort is a loopback port free a moment ago, never one freePort or
// listenLocal gave before in this process.
func freePort() (int, error) {
	ln, err := handedOut.listenNew(listenAny)
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// freePortPair is a free port whose next port is free too (etcd's client
// and peer ports), neither handed out before.
func freePortPair() (int, error) {
	for range 20 {
		p, err := freePort()
		if err != nil {
			return 0, err
		}
		if ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+1)); err == nil {
			ln.Close()
			if handedOut.take(p + 1) {
				return p, nil
			}
		}
	}
	return 0, errors.New("soak: no two free ports in a row")
}
