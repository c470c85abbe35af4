// Package loopback hands out loopback TCP ports, never the same one twice
// in a process. A port found free is closed again until the process it is
// for binds it, and the kernel may give it meanwhile to the next listener
// on port 0 (a proxy binding the port picked a moment before for an etcd
// member's peers). The fault soak
// and the e2e harness take their ports here.
package loopback

import (
	"errors"
	"net"
	"strconv"
	"sync"
)

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
	return nil, errors.New("loopback: no port not handed out before")
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

// Listen listens on a loopback port not handed out before (to a process
// that may not have bound it yet).
func Listen() (net.Listener, error) { return handedOut.listenNew(listenAny) }

// Port is a loopback port free a moment ago, never one Port, Pair or
// Listen gave before in this process.
func Port() (int, error) {
	ln, err := Listen()
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Pair is a free port whose next port is free too (etcd's client and
// peer ports), neither handed out before.
func Pair() (int, error) {
	for range 20 {
		p, err := Port()
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
	return 0, errors.New("loopback: no two free ports in a row")
}
