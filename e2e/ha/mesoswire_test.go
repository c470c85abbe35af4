//go:build e2e

package ha

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// mesosRecorder reads the HTTP requests a scheduler sends to mesos-local
// through a proxy (the v1 scheduler API, JSON calls) and the answers, and
// records every call with its type and status.

// mesosCall is one call a scheduler sent.
type mesosCall struct {
	conn    int
	path    string // /api/v1/scheduler for the scheduler API
	typ     string // the call's "type" (SUBSCRIBE, ACCEPT, …), or the method when not a call
	sent    time.Time
	replied bool
	status  int
}

func (c mesosCall) String() string {
	state := "no reply"
	if c.replied {
		state = fmt.Sprint(c.status)
	}
	return fmt.Sprintf("%s %s %s (%s)", c.sent.Format("15:04:05.000"), c.path, c.typ, state)
}

// accepted reports whether the master took the call.
func (c mesosCall) accepted() bool { return c.replied && c.status/100 == 2 }

// acts reports whether the master took a call that acts on the cluster: any call of the
// scheduler API (SUBSCRIBE, ACCEPT, DECLINE, KILL, REVIVE, ACKNOWLEDGE, …) or any request
// other than a read. A read (GET: the agents' flags, /slaves, /state) changes nothing, so
// a deposed leader's reads, sent before it learns its term has lapsed, are harmless.
func (c mesosCall) acts() bool {
	return c.accepted() && (c.path == "/api/v1/scheduler" || c.typ != http.MethodGet)
}

type mesosRecorder struct {
	mu    sync.Mutex
	calls []*mesosCall
	queue map[int][]*mesosCall // per connection, calls awaiting their answer (HTTP/1.1 answers in order)
}

func (r *mesosRecorder) observe(conn int) (io.WriteCloser, io.WriteCloser) {
	return streamParser(func(rd io.Reader) { r.requests(conn, rd) }), streamParser(func(rd io.Reader) { r.responses(conn, rd) })
}

func (r *mesosRecorder) since(t time.Time) []mesosCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []mesosCall
	for _, c := range r.calls {
		if !c.sent.Before(t) {
			out = append(out, *c)
		}
	}
	return out
}

func (r *mesosRecorder) requests(conn int, rd io.Reader) {
	br := bufio.NewReader(rd)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		at := time.Now()
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		c := &mesosCall{conn: conn, sent: at, path: req.URL.Path, typ: req.Method}
		var call struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(body, &call) == nil && call.Type != "" {
			c.typ = call.Type
		}
		r.mu.Lock()
		if r.queue == nil {
			r.queue = map[int][]*mesosCall{}
		}
		r.calls = append(r.calls, c)
		r.queue[conn] = append(r.queue[conn], c)
		r.mu.Unlock()
	}
}

func (r *mesosRecorder) responses(conn int, rd io.Reader) {
	br := bufio.NewReader(rd)
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return
		}
		// An answer can be parsed before its request: give the request's parser a moment.
		poll(time.Second, func() bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.queue[conn]) > 0 })
		r.mu.Lock()
		if q := r.queue[conn]; len(q) > 0 {
			q[0].replied, q[0].status = true, resp.StatusCode
			r.queue[conn] = q[1:]
		}
		r.mu.Unlock()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil { // a SUBSCRIBE stream lasts until the connection ends
			return
		}
		resp.Body.Close()
	}
}
