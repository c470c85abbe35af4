package executor

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/executor"
)

// restartedAgent takes subscriptions whose streams stay open until closed and refuses the
// first UPDATE, as an agent restarted between the executor's SUBSCRIBE and its update may:
// subs receives each SUBSCRIBE's unacknowledged updates.
type restartedAgent struct {
	mu      sync.Mutex
	refused bool
	subs    chan []string
}

type openStream struct{ closed chan struct{} }

func (s *openStream) Decode(*executor.Event) error { <-s.closed; return errors.New("closed") }
func (s *openStream) Close() error                 { close(s.closed); return nil }

func (a *restartedAgent) Subscribe(_ context.Context, c *executor.Call) (Events, error) {
	var us []string
	for _, u := range c.Subscribe.UnacknowledgedUpdates {
		us = append(us, describe(&executor.Call{Type: executor.Call_UPDATE, Update: &u}))
	}
	a.subs <- us
	return &openStream{closed: make(chan struct{})}, nil
}

func (a *restartedAgent) Send(context.Context, *executor.Call) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.refused {
		a.refused = true
		return errors.New("executor is not subscribed")
	}
	return nil
}

// TestUndeliveredUpdateSubscribesAgain: an update the agent does not take while the
// executor's stream stays up goes with a new SUBSCRIBE at once; it waited for a
// re-subscription the stream gave no cause for, and the task's end never reached the
// scheduler.
func TestUndeliveredUpdateSubscribesAgain(t *testing.T) {
	a := &restartedAgent{subs: make(chan []string, 4)}
	e := New(a, nil, Options{ExecutorID: "ex", BackoffMin: time.Millisecond, BackoffMax: time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { _ = e.Run(ctx) }()
	if first := <-a.subs; len(first) != 0 {
		t.Fatalf("first SUBSCRIBE carries %v", first)
	}
	e.update("t1", mesos.TASK_FINISHED, "")
	select {
	case again := <-a.subs:
		if len(again) != 1 || again[0] != "t1:TASK_FINISHED" {
			t.Fatalf("the next SUBSCRIBE carries %v, want the undelivered t1:TASK_FINISHED", again)
		}
	case <-time.After(30 * time.Second): // a bound, never reached when the failure subscribes again
		t.Fatal("the undelivered update waited for a re-subscription that did not come")
	}
}
