package executor

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/executor"
	"github.com/mesos/mesos-go/api/v1/lib/executor/calls"
)

// update queues a status update with a fresh uuid.
func (e *Executor) update(id string, state mesos.TaskState, msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.updateLocked(id, state, msg)
}

func (e *Executor) updateLocked(id string, state mesos.TaskState, msg string) {
	e.updateDataLocked(id, state, msg, nil)
}

// updateDataLocked queues an update carrying data (TaskStatus.data).
func (e *Executor) updateDataLocked(id string, state mesos.TaskState, msg string, data []byte) {
	e.updateStatusLocked(id, state, msg, data, nil)
}

// updateStatusLocked queues an update with data and a reason (each optional).
func (e *Executor) updateStatusLocked(id string, state mesos.TaskState, msg string, data []byte, reason *mesos.TaskStatus_Reason) {
	uuid := make([]byte, 16)
	_, _ = rand.Read(uuid)
	uuid[6] = uuid[6]&0x0f | 0x40 // RFC 4122 version 4, as the agent parses it
	uuid[8] = uuid[8]&0x3f | 0x80
	now := float64(time.Now().UnixNano()) / 1e9
	st := mesos.TaskStatus{
		TaskID:     mesos.TaskID{Value: id},
		State:      state.Enum(),
		Source:     mesos.SOURCE_EXECUTOR.Enum(),
		ExecutorID: &mesos.ExecutorID{Value: e.opt.ExecutorID},
		Timestamp:  &now,
		UUID:       uuid,
		Data:       data,
		Reason:     reason,
	}
	if msg != "" {
		st.Message = &msg
	}
	u := executor.Call_Update{Status: st}
	e.unacked = append(e.unacked, u)
	e.queueLocked(outgoing{update: &u})
}

// outgoing is a call to send: a status update or a framework message.
type outgoing struct {
	update  *executor.Call_Update
	message []byte
}

func (e *Executor) queueLocked(o outgoing) {
	e.outbox = append(e.outbox, o)
	select {
	case e.outbox1 <- struct{}{}:
	default:
	}
}

// message queues a framework message (a daemon run report) behind the
// updates queued before it, so the scheduler sees TASK_RUNNING first.
// Messages are not acknowledged: one that cannot be sent is dropped, as
// Mesos does.
func (e *Executor) message(data []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.queueLocked(outgoing{message: data})
}

// ack drops an acknowledged update, and the task from the unacknowledged
// tasks.
func (e *Executor) ack(id string, uuid []byte) {
	e.mu.Lock()
	for i, u := range e.unacked {
		if bytes.Equal(u.Status.UUID, uuid) {
			e.unacked = append(e.unacked[:i:i], e.unacked[i+1:]...)
			break
		}
	}
	delete(e.unackedTasks, id)
	delete(e.accepted, string(uuid))
	e.mu.Unlock()
	e.notify()
}

// sendLoop sends queued updates in order: what queued while a request was
// in flight goes in one request when the agent takes batches (BatchAgent),
// otherwise one call a request. An update that cannot be sent stays
// unacknowledged and goes with the next SUBSCRIBE, which the failure brings
// about (resubscribeFor): a live stream is no proof the agent will take
// the next call.
func (e *Executor) sendLoop(ctx context.Context) {
	batches, _ := e.agent.(BatchAgent)
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.outbox1:
		}
		e.mu.Lock()
		batch := e.outbox
		e.outbox = nil
		e.mu.Unlock()
		if len(batch) > 1 && batches != nil {
			err := e.sendBatch(ctx, batches, batch)
			var refused *BatchRefused
			if err == nil {
				continue
			}
			if !errors.As(err, &refused) {
				e.log.Warn("status updates not delivered; they will be resent on re-subscription", "calls", len(batch), "err", err)
				e.resubscribeFor(batch)
				continue
			}
			if refused.Code == http.StatusUnsupportedMediaType {
				e.log.Info("the agent takes one call per request", "err", err)
				batches = nil
			}
			// None was applied: one by one, each gets its own answer.
		}
		for _, o := range batch {
			if o.message != nil {
				if err := e.agent.Send(ctx, calls.Message(o.message)); err != nil {
					e.log.Warn("framework message not delivered", "bytes", len(o.message), "err", err)
				}
				continue
			}
			u := o.update
			if err := e.agent.Send(ctx, calls.Update(u.Status)); err != nil {
				e.log.Warn("status update not delivered; it will be resent on re-subscription",
					"task", u.Status.TaskID.Value, "state", u.Status.State.String(), "err", err)
				e.resubscribeFor([]outgoing{o})
				continue
			}
			e.mu.Lock()
			e.accepted[string(u.Status.UUID)] = true
			e.mu.Unlock()
			e.notify()
		}
	}
}

// resubscribeFor ends the session when batch held an update the agent did not take
// (sendLoop); messages are dropped, as Mesos drops them.
func (e *Executor) resubscribeFor(batch []outgoing) {
	for _, o := range batch {
		if o.update != nil {
			select {
			case e.undelivered <- struct{}{}:
			default:
			}
			return
		}
	}
}

// sendBatch sends batch's calls in one request; on success every update
// in it is accepted.
func (e *Executor) sendBatch(ctx context.Context, agent BatchAgent, batch []outgoing) error {
	cs := make([]*executor.Call, len(batch))
	for i, o := range batch {
		if o.message != nil {
			cs[i] = calls.Message(o.message)
		} else {
			cs[i] = calls.Update(o.update.Status)
		}
	}
	if err := agent.SendBatch(ctx, cs); err != nil {
		return err
	}
	e.mu.Lock()
	for _, o := range batch {
		if o.update != nil {
			e.accepted[string(o.update.Status.UUID)] = true
		}
	}
	e.mu.Unlock()
	e.notify()
	return nil
}

// allAcceptedLocked reports whether the agent has accepted (202) every
// unacknowledged update. Called with e.mu held.
func (e *Executor) allAcceptedLocked() bool {
	if len(e.outbox) > 0 {
		return false
	}
	for _, u := range e.unacked {
		if !e.accepted[string(u.Status.UUID)] {
			return false
		}
	}
	return true
}
