package mesos

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler/calls"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/task"
)

// stream dispatches the events of one subscription to the handler.
type stream struct {
	c          *Client
	h          engine.Handler
	sess       *session
	wd         *watchdog
	subscribed bool
	acks       chan ackReq   // acknowledgements of asynchronously handled updates
	done       chan struct{} // closed when the stream ends
}

// handle dispatches one event; a non-nil error ends the stream.
func (s *stream) handle(ctx context.Context, ev *event) error {
	switch ev.Type {
	case scheduler.Event_SUBSCRIBED:
		s.onSubscribed(ctx, ev.GetSubscribed())
	case scheduler.Event_HEARTBEAT:
	case scheduler.Event_ERROR:
		return s.onError(ev.GetError().GetMessage())
	default:
		if !s.subscribed {
			s.c.log.Warn("event before SUBSCRIBED ignored", "type", ev.Type.String())
			return nil
		}
		s.dispatch(ctx, ev)
	}
	return nil
}

func (s *stream) dispatch(ctx context.Context, ev *event) {
	switch ev.Type {
	case scheduler.Event_OFFERS:
		if offers := s.c.holdOffers(ev.GetOffers().GetOffers()); len(offers) > 0 {
			s.h.Offers(ctx, offers)
		}
	case scheduler.Event_RESCIND:
		id := ev.GetRescind().GetOfferID().Value
		s.c.dropOffers([]string{id})
		s.h.Rescinded(ctx, id)
	case scheduler.Event_UPDATE:
		s.onUpdate(ctx, ev)
	case scheduler.Event_MESSAGE:
		m := ev.GetMessage()
		s.h.Message(ctx, m.GetAgentID().Value, m.GetExecutorID().Value, m.GetData())
	case scheduler.Event_FAILURE:
		f := ev.GetFailure()
		s.h.Failure(ctx, f.GetAgentID().GetValue(), f.GetExecutorID().GetValue(), f.Status)
	default:
		s.c.log.Debug("event ignored", "type", ev.Type.String())
	}
}

func (s *stream) onSubscribed(ctx context.Context, sub *scheduler.Event_Subscribed) {
	id := sub.GetFrameworkID().GetValue()
	if prev := s.c.FrameworkID(); prev != "" && prev != id {
		s.c.log.Warn("master assigned a new framework id", "old", prev, "new", id)
	}
	s.c.setSession(s.sess, id)
	s.subscribed = true
	s.wd.setInterval(sub.GetHeartbeatIntervalSeconds())
	s.c.log.Info("subscribed", "framework_id", id, "stream_id", s.sess.streamID,
		"heartbeat_seconds", sub.GetHeartbeatIntervalSeconds())
	s.h.Subscribed(ctx, id)
}

// onError handles an ERROR event. Mesos sends it when the framework can no longer use its id,
// typically "Framework has been removed" (failover timeout expired or torn down): the client
// then starts over as a new framework. "Framework failed over" means another scheduler
// subscribed with the same id; the id is kept, since leader election, not this client, decides
// which instance owns the framework.
func (s *stream) onError(msg string) error {
	if strings.Contains(strings.ToLower(msg), "failed over") {
		s.c.log.Error("master sent ERROR: another scheduler took over this framework",
			"message", msg, "framework_id", s.c.FrameworkID())
	} else {
		s.c.log.Error("master sent ERROR: starting over as a NEW framework; tasks of the old framework are lost to this scheduler",
			"message", msg, "old_framework_id", s.c.FrameworkID())
		s.c.resetFrameworkID()
	}
	return fmt.Errorf("%w: %s", ErrMasterError, msg)
}

// onUpdate passes a status update to the handler and acknowledges it once the handler says
// it is handled (done(true)).
func (s *stream) onUpdate(ctx context.Context, ev *event) {
	ts := ev.GetUpdate().Status
	st := toStatus(ts, ev)
	uuid := ts.UUID
	s.h.UpdateAsync(ctx, st, func(handled bool) {
		if !handled {
			s.c.log.Warn("status update not handled, not acknowledged", "task_id", st.TaskID, "state", st.State)
			return
		}
		if len(uuid) > 0 {
			s.ack(ctx, st, uuid)
		}
	})
}

// toStatus converts a TaskStatus into the engine's terms: its state, reason and source enums
// become task.State, task.Reason and task.Source of the same Mesos name (the scheduler's
// vocabulary spells them as Mesos does). Raw enum names from the wire win over decoded
// ones, so states unknown to the v0.0.11 protos keep their names.
func toStatus(ts mesos.TaskStatus, ev *event) engine.Status {
	st := engine.Status{
		TaskID:     ts.TaskID.Value,
		AgentID:    ts.GetAgentID().GetValue(),
		ExecutorID: ts.GetExecutorID().GetValue(),
		State:      task.State(firstNonEmpty(ev.rawState, ts.GetState().String())),
		Message:    ts.GetMessage(),
		Data:       ts.Data,
		Healthy:    ts.Healthy,
	}
	reason, source := "", ""
	if ts.Reason != nil {
		reason = ts.Reason.String()
	}
	if ts.Source != nil {
		source = ts.Source.String()
	}
	st.Reason = task.Reason(firstNonEmpty(ev.rawReason, reason))
	st.Source = task.Source(firstNonEmpty(ev.rawSource, source))
	if ts.Timestamp != nil {
		sec, frac := math.Modf(*ts.Timestamp)
		st.Timestamp = time.Unix(int64(sec), int64(frac*1e9))
	}
	if ut := ts.GetUnreachableTime(); ut != nil {
		st.UnreachableSince = time.Unix(0, ut.Nanoseconds)
	}
	return st
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ackWorkers send acknowledgements concurrently with the event stream. A
// task's life is three updates, so a scheduler launching a thousand tasks
// a second acknowledges three thousand: one call each (the v1 API has no
// batched ACKNOWLEDGE), kept concurrent over as many connections.
const ackWorkers = 8

type ackReq struct {
	st   engine.Status
	uuid []byte
}

// ack queues the acknowledgement of an update handled asynchronously.
func (s *stream) ack(ctx context.Context, st engine.Status, uuid []byte) {
	select {
	case s.acks <- ackReq{st, uuid}:
	case <-ctx.Done():
	case <-s.done:
	}
}

// runAcks sends queued acknowledgements until the stream ends; what is left
// unacknowledged Mesos resends.
func (s *stream) runAcks(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.done:
			return
		case a := <-s.acks:
			if err := s.c.call(ctx, calls.Acknowledge(a.st.AgentID, a.st.TaskID, a.uuid)); err != nil {
				s.c.log.Warn("acknowledge failed; Mesos will resend the update", "task_id", a.st.TaskID,
					"state", a.st.State, "err", err)
			}
		}
	}
}
