package zk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"github.com/go-zookeeper/zk"
)

// Pipelined multis: the client's Multi waits for its reply, so multis
// sent one after another cost a round trip each. queueMulti puts a multi
// on the connection and returns at once; the server answers a session's
// requests in the order they were sent, so multis queued in turn are
// applied in that order, and their replies are read in it (chain.go).

// connQueue is the client's unexported (*Conn).queueRequest: it puts a
// request on the connection's send queue (in call order) and returns the
// channel its reply comes on. zkReply has the layout of the client's own
// reply type (a zxid and an error).
//
//go:linkname connQueue github.com/go-zookeeper/zk.(*Conn).queueRequest
func connQueue(c *zk.Conn, opcode int32, req, res any, recv func(unsafe.Pointer, unsafe.Pointer, error)) <-chan zkReply

type zkReply struct {
	zxid int64
	err  error
}

const (
	opCreate  = 1
	opDelete  = 2
	opSetData = 5
	opCheck   = 13
	opMulti   = 14
	opError   = -1
)

// multiRequest is a multi's body in jute, encoded by hand (the client
// encodes any value with an Encode method that way).
type multiRequest struct{ ops []any }

// multiReply is a multi's reply: one result per op.
type multiReply struct{ res []zk.MultiResponse }

// queueMulti sends a multi of ops (*zk.CreateRequest, *zk.SetDataRequest,
// *zk.DeleteRequest, *zk.CheckVersionRequest) without waiting; the reply
// fills res before it comes on the channel. The multis are put on the
// connection by one sender goroutine, in the order queueMulti was called:
// the client's send queue holds 16 requests, and a caller that waited for
// room there could not give up when its context ends (a leader cut off
// from ZooKeeper whose term ended would stay blocked until the
// connection came back).
func (s *Store) queueMulti(ops []any) (<-chan zkReply, *multiReply) {
	res := &multiReply{}
	reply := make(chan zkReply, 1)
	s.sendMu.Lock()
	s.sendQ = append(s.sendQ, outgoing{req: &multiRequest{ops: ops}, res: res, reply: reply})
	if !s.sending {
		s.sending = true
		go s.send()
	}
	s.sendMu.Unlock()
	return reply, res
}

// outgoing is a multi waiting for the sender.
type outgoing struct {
	req   *multiRequest
	res   *multiReply
	reply chan zkReply
}

// send puts the queued multis on the connection in order, until none is
// left (the next queueMulti starts it again).
func (s *Store) send() {
	for {
		s.sendMu.Lock()
		if len(s.sendQ) == 0 {
			s.sending = false
			s.sendMu.Unlock()
			return
		}
		o := s.sendQ[0]
		s.sendQ[0] = outgoing{}
		s.sendQ = s.sendQ[1:]
		s.sendMu.Unlock()
		ch := connQueue(s.conn, opMulti, o.req, o.res, nil)
		go func() { o.reply <- <-ch }()
	}
}

var errShort = errors.New("zk store: a multi is larger than the client's buffer")

// jw writes jute values into a buffer.
type jw struct {
	buf []byte
	n   int
	err error
}

func (w *jw) room(k int) bool {
	if w.err == nil && w.n+k > len(w.buf) {
		w.err = errShort
	}
	return w.err == nil
}

func (w *jw) int32(v int32) {
	if w.room(4) {
		binary.BigEndian.PutUint32(w.buf[w.n:], uint32(v))
		w.n += 4
	}
}

func (w *jw) bool(v bool) {
	if w.room(1) {
		w.buf[w.n] = 0
		if v {
			w.buf[w.n] = 1
		}
		w.n++
	}
}

func (w *jw) bytes(b []byte, null bool) {
	if null {
		w.int32(-1)
		return
	}
	w.int32(int32(len(b)))
	if w.room(len(b)) {
		w.n += copy(w.buf[w.n:], b)
	}
}

func (w *jw) string(s string) {
	w.int32(int32(len(s)))
	if w.room(len(s)) {
		w.n += copy(w.buf[w.n:], s)
	}
}

// Encode writes the ops, each behind its header, then the done header.
func (m *multiRequest) Encode(buf []byte) (int, error) {
	w := &jw{buf: buf}
	for _, op := range m.ops {
		switch r := op.(type) {
		case *zk.CreateRequest:
			w.int32(opCreate)
			w.bool(false)
			w.int32(-1)
			w.string(r.Path)
			w.bytes(r.Data, r.Data == nil)
			w.int32(int32(len(r.Acl)))
			for _, a := range r.Acl {
				w.int32(a.Perms)
				w.string(a.Scheme)
				w.string(a.ID)
			}
			w.int32(r.Flags)
		case *zk.SetDataRequest:
			w.int32(opSetData)
			w.bool(false)
			w.int32(-1)
			w.string(r.Path)
			w.bytes(r.Data, r.Data == nil)
			w.int32(r.Version)
		case *zk.DeleteRequest:
			w.int32(opDelete)
			w.bool(false)
			w.int32(-1)
			w.string(r.Path)
			w.int32(r.Version)
		case *zk.CheckVersionRequest:
			w.int32(opCheck)
			w.bool(false)
			w.int32(-1)
			w.string(r.Path)
			w.int32(r.Version)
		default:
			return w.n, fmt.Errorf("zk store: multi: unknown request %T", op)
		}
	}
	w.int32(-1)
	w.bool(true)
	w.int32(-1)
	return w.n, w.err
}

// jr reads jute values from a buffer.
type jr struct {
	buf []byte
	n   int
	err error
}

func (r *jr) need(k int) bool {
	if r.err == nil && (k < 0 || r.n+k > len(r.buf)) {
		r.err = errShort
	}
	return r.err == nil
}

func (r *jr) int32() int32 {
	if !r.need(4) {
		return 0
	}
	v := int32(binary.BigEndian.Uint32(r.buf[r.n:]))
	r.n += 4
	return v
}

func (r *jr) int64() int64 {
	if !r.need(8) {
		return 0
	}
	v := int64(binary.BigEndian.Uint64(r.buf[r.n:]))
	r.n += 8
	return v
}

func (r *jr) bool() bool {
	if !r.need(1) {
		return false
	}
	r.n++
	return r.buf[r.n-1] != 0
}

func (r *jr) string() string {
	k := r.int32()
	if k <= 0 || !r.need(int(k)) {
		return ""
	}
	r.n += int(k)
	return string(r.buf[r.n-int(k) : r.n])
}

func (r *jr) stat() *zk.Stat {
	return &zk.Stat{Czxid: r.int64(), Mzxid: r.int64(), Ctime: r.int64(), Mtime: r.int64(), Version: r.int32(),
		Cversion: r.int32(), Aversion: r.int32(), EphemeralOwner: r.int64(), DataLength: r.int32(),
		NumChildren: r.int32(), Pzxid: r.int64()}
}

// Decode reads one result per op; a failed multi's results are errors
// (the failed op's, ok for those before it, a runtime inconsistency for
// those after it). It returns the first error, as the client's own does.
func (m *multiReply) Decode(buf []byte) (int, error) {
	r := &jr{buf: buf}
	var first error
	for r.err == nil {
		typ, done, code := r.int32(), r.bool(), r.int32()
		if done || r.err != nil {
			break
		}
		res := zk.MultiResponse{}
		switch typ {
		case opError:
			res.Error = codeError(r.int32())
		case opCreate:
			res.String = r.string()
		case opSetData:
			res.Stat = r.stat()
		case opCheck, opDelete:
		default:
			return r.n, fmt.Errorf("zk store: multi reply: unknown op type %d (code %d)", typ, code)
		}
		m.res = append(m.res, res)
		if first == nil && res.Error != nil {
			first = res.Error
		}
	}
	if r.err != nil {
		return r.n, r.err
	}
	return r.n, first
}

// codeError maps a ZooKeeper error code to the client's error values.
func codeError(code int32) error {
	switch code {
	case 0:
		return nil
	case -101:
		return zk.ErrNoNode
	case -102:
		return zk.ErrNoAuth
	case -103:
		return zk.ErrBadVersion
	case -108:
		return zk.ErrNoChildrenForEphemerals
	case -110:
		return zk.ErrNodeExists
	case -111:
		return zk.ErrNotEmpty
	case -112:
		return zk.ErrSessionExpired
	case -114:
		return zk.ErrInvalidACL
	case -118:
		return zk.ErrSessionMoved
	}
	return fmt.Errorf("zk: error code %d", code)
}
