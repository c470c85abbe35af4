package embedded

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// eventStream is an ordered, unbounded queue of encoded events drained by
// exactly one goroutine (serve) onto an HTTP response. push never blocks,
// so it is safe to call while holding the cluster mutex.
type eventStream struct {
	format streamFormat
	id     string

	mu     sync.Mutex
	queue  [][]byte
	bytes  int // of queue
	closed bool
	wake   chan struct{}
	done   chan struct{}
}

func newEventStream(format streamFormat, id string) *eventStream {
	return &eventStream{format: format, id: id, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// push encodes m and queues it; it reports false when the stream is closed
// or m cannot be encoded.
func (s *eventStream) push(m message) bool {
	b, err := s.format.codec.encodeFrame(m)
	if err != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.queue = append(s.queue, b)
	s.bytes += len(b)
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return true
}

// close ends the stream after the events already queued are written.
func (s *eventStream) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.done)
	}
}

// queued is the number of events not yet written.
func (s *eventStream) queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

func (s *eventStream) take() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queue
	s.queue, s.bytes = nil, 0
	return q
}

// queuedBytes is the size of the events not yet taken to be written.
func (s *eventStream) queuedBytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

// serve writes the response headers and then queued events in order until
// the stream is closed, the client goes away or a write fails. heartbeat,
// when non-nil, is pushed every interval.
func (s *eventStream) serve(ctx context.Context, w http.ResponseWriter, heartbeat message, interval time.Duration) error {
	h := w.Header()
	h.Set("Content-Type", s.format.contentType)
	if s.format.messageType != "" {
		h.Set("Message-Content-Type", s.format.messageType)
	}
	if s.id != "" {
		h.Set("Mesos-Stream-Id", s.id)
	}
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if err := rc.Flush(); err != nil {
		return err
	}
	var tick <-chan time.Time
	if heartbeat != nil && interval > 0 {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick:
			s.push(heartbeat)
		case <-s.wake:
		case <-s.done:
			return s.flush(w, rc)
		}
		if err := s.flush(w, rc); err != nil {
			return err
		}
	}
}

func (s *eventStream) flush(w http.ResponseWriter, rc *http.ResponseController) error {
	q := s.take()
	if len(q) == 0 {
		return nil
	}
	for _, b := range q {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return rc.Flush()
}
