//go:build e2e

package ha

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// zkRecorder reads the ZooKeeper client protocol (jute: big-endian,
// length-prefixed packets) going through a proxy and records every write
// request with its paths and whether it committed.

// ZooKeeper opcodes of writes.
const (
	zkCreate          = 1
	zkDelete          = 2
	zkSetData         = 5
	zkSetACL          = 7
	zkCheck           = 13
	zkMulti           = 14
	zkCreate2         = 15
	zkCreateContainer = 19
	zkCreateTTL       = 21
)

var zkOpNames = map[int32]string{zkCreate: "create", zkDelete: "delete", zkSetData: "setData", zkSetACL: "setACL",
	zkCheck: "check", zkMulti: "multi", zkCreate2: "create2", zkCreateContainer: "createContainer", zkCreateTTL: "createTTL"}

// zkWrite is one write request a client sent.
type zkWrite struct {
	conn    int
	xid     int32
	op      string
	paths   []string // a multi's ops: "op path"
	sent    time.Time
	replied bool
	err     int32 // the reply header's error code
	ok      bool  // committed
}

func (w zkWrite) String() string {
	state := "no reply"
	if w.replied {
		state = fmt.Sprintf("err %d, committed %v", w.err, w.ok)
	}
	return fmt.Sprintf("%s %s [%s] (%s)", w.sent.Format("15:04:05.000"), w.op, strings.Join(w.paths, "; "), state)
}

type zkRecorder struct {
	mu     sync.Mutex
	writes []*zkWrite
	open   map[[2]int]*zkWrite // (conn, xid) → request awaiting its reply (nil: not a write)
}

func (r *zkRecorder) observe(conn int) (io.WriteCloser, io.WriteCloser) {
	return streamParser(func(rd io.Reader) { r.requests(conn, rd) }), streamParser(func(rd io.Reader) { r.replies(conn, rd) })
}

// since returns the writes sent at or after t.
func (r *zkRecorder) since(t time.Time) []zkWrite {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []zkWrite
	for _, w := range r.writes {
		if !w.sent.Before(t) {
			out = append(out, *w)
		}
	}
	return out
}

func readPacket(rd io.Reader) ([]byte, error) {
	var n int32
	if err := binary.Read(rd, binary.BigEndian, &n); err != nil {
		return nil, err
	}
	if n < 0 || n > 64<<20 {
		return nil, fmt.Errorf("zk packet length %d", n)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(rd, b)
	return b, err
}

func (r *zkRecorder) requests(conn int, rd io.Reader) {
	if _, err := readPacket(rd); err != nil { // ConnectRequest
		return
	}
	for {
		pkt, err := readPacket(rd)
		if err != nil {
			return
		}
		at := time.Now()
		d := &jute{b: pkt}
		xid, op := d.int32(), d.int32()
		if d.err != nil || xid <= 0 {
			continue
		}
		var w *zkWrite
		if name, isWrite := zkOpNames[op]; isWrite {
			w = &zkWrite{conn: conn, xid: xid, op: name, sent: at, paths: writePaths(op, d)}
		}
		r.mu.Lock()
		if r.open == nil {
			r.open = map[[2]int]*zkWrite{}
		}
		if w != nil {
			r.writes = append(r.writes, w)
		}
		r.open[[2]int{conn, int(xid)}] = w
		r.mu.Unlock()
	}
}

func (r *zkRecorder) replies(conn int, rd io.Reader) {
	if _, err := readPacket(rd); err != nil { // ConnectResponse
		return
	}
	for {
		pkt, err := readPacket(rd)
		if err != nil {
			return
		}
		d := &jute{b: pkt}
		xid := d.int32()
		_ = d.int64() // zxid
		code := d.int32()
		if d.err != nil || xid <= 0 { // notifications, pings, auth and set-watches replies
			continue
		}
		key := [2]int{conn, int(xid)}
		// A reply can be parsed before its request: give the request's parser a moment.
		poll(time.Second, func() bool { r.mu.Lock(); defer r.mu.Unlock(); _, ok := r.open[key]; return ok })
		r.mu.Lock()
		w := r.open[key]
		delete(r.open, key)
		if w != nil {
			w.replied, w.err, w.ok = true, code, code == 0
			if code == 0 && w.op == "multi" {
				typ := d.int32() // the first result's MultiHeader: type -1 is an error result
				w.ok = d.err == nil && typ != -1
			}
		}
		r.mu.Unlock()
	}
}

// writePaths decodes the paths a write request touches.
func writePaths(op int32, d *jute) []string {
	if op != zkMulti {
		p := writeOp(op, d)
		if d.err != nil {
			return []string{"?"}
		}
		return []string{p}
	}
	var out []string
	for d.err == nil {
		typ := d.int32()
		done := d.byte()
		_ = d.int32()
		if done != 0 || d.err != nil {
			break
		}
		p := writeOp(typ, d)
		out = append(out, zkOpNames[typ]+" "+p)
	}
	if d.err != nil {
		out = append(out, "?")
	}
	return out
}

// writeOp decodes one write's body and returns its path.
func writeOp(op int32, d *jute) string {
	p := d.str()
	switch op {
	case zkCreate, zkCreate2, zkCreateContainer, zkCreateTTL:
		d.buf()
		d.acl()
		d.int32()
		if op == zkCreateTTL {
			d.int64()
		}
	case zkDelete, zkCheck:
		d.int32()
	case zkSetData:
		d.buf()
		d.int32()
	case zkSetACL:
		d.acl()
		d.int32()
	default:
		d.err = fmt.Errorf("op %d in a multi", op)
	}
	return p
}

// jute decodes big-endian jute records; the first error sticks.
type jute struct {
	b   []byte
	err error
}

var errShort = errors.New("jute: short record")

func (d *jute) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.err = errShort
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *jute) byte() byte {
	if v := d.take(1); v != nil {
		return v[0]
	}
	return 0
}

func (d *jute) int32() int32 {
	if v := d.take(4); v != nil {
		return int32(binary.BigEndian.Uint32(v))
	}
	return 0
}

func (d *jute) int64() int64 {
	if v := d.take(8); v != nil {
		return int64(binary.BigEndian.Uint64(v))
	}
	return 0
}

func (d *jute) buf() []byte {
	n := d.int32()
	if n < 0 {
		return nil
	}
	return d.take(int(n))
}

func (d *jute) str() string { return string(d.buf()) }

func (d *jute) acl() {
	for n := d.int32(); n > 0 && d.err == nil; n-- {
		d.int32()
		d.str()
		d.str()
	}
}
