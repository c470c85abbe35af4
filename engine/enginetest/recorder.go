package enginetest

import (
	"context"
	"sync"

	"github.com/ejcloud/elasticjob/engine"
)

// recorder is the engine.Handler of a check: it records what the engine tells it and
// commits every status update at once.
type recorder struct {
	subscribed chan string
	offers     chan []engine.Offer

	mu    sync.Mutex
	tasks map[string]chan engine.Status // updates by task id, in order
}

func newRecorder() *recorder {
	return &recorder{subscribed: make(chan string, 16), offers: make(chan []engine.Offer, 1024), tasks: map[string]chan engine.Status{}}
}

func (h *recorder) updates(taskID string) chan engine.Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.tasks[taskID]
	if c == nil {
		c = make(chan engine.Status, 1024)
		h.tasks[taskID] = c
	}
	return c
}

func (h *recorder) Subscribed(_ context.Context, id string) {
	select {
	case h.subscribed <- id:
	default:
	}
}

func (h *recorder) Offers(_ context.Context, os []engine.Offer) {
	select {
	case h.offers <- os:
	default: // nobody asks for offers: old ones do not matter
	}
}

func (h *recorder) Rescinded(context.Context, string) {}

func (h *recorder) UpdateAsync(_ context.Context, s engine.Status, done func(bool)) {
	select {
	case h.updates(s.TaskID) <- s:
	default:
	}
	done(true)
}

func (h *recorder) Message(context.Context, string, string, []byte) {}

func (h *recorder) Failure(context.Context, string, string, *int32) {}

func (h *recorder) Disconnected(context.Context, error) {}
