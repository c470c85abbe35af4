package embedded

import (
	"net/http"

	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// schedulerAPI serves the v1 scheduler API (/api/v1/scheduler): SUBSCRIBE
// opens a framework's event stream, every other call is dispatched to the
// cluster under Cluster.mu. It keeps no state of its own.
type schedulerAPI struct{ c *Cluster }

// handleScheduler serves POST /api/v1/scheduler.
func (s *schedulerAPI) handleScheduler(w http.ResponseWriter, r *http.Request) {
	var call scheduler.Call
	reqCodec, herr := readCall(w, r, &call)
	if herr != nil {
		writeError(w, herr)
		return
	}
	if call.Type == scheduler.Call_SUBSCRIBE {
		s.serveSubscribe(w, r, &call, reqCodec)
		return
	}
	if herr := s.dispatch(&call, r.Header.Get("Mesos-Stream-Id")); herr != nil {
		writeError(w, herr)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

func (s *schedulerAPI) serveSubscribe(w http.ResponseWriter, r *http.Request, call *scheduler.Call, req codec) {
	sub := call.Subscribe
	if sub == nil || sub.FrameworkInfo == nil {
		writeError(w, errorf(http.StatusBadRequest, "Expecting 'subscribe' to be present"))
		return
	}
	info := *sub.FrameworkInfo
	if call.FrameworkID != nil && call.FrameworkID.Value != info.GetID().GetValue() {
		writeError(w, errorf(http.StatusBadRequest, "'framework_id' differs from 'subscribe.framework_info.id'"))
		return
	}
	format, err := negotiateStream(r, req)
	if err != nil {
		writeError(w, errorf(http.StatusNotAcceptable, "%v", err))
		return
	}
	fwID, stream, herr := s.c.subscribe(info, format, len(sub.SuppressedRoles) > 0)
	if herr != nil {
		writeError(w, herr)
		return
	}
	hb := &scheduler.Event{Type: scheduler.Event_HEARTBEAT}
	err = stream.serve(r.Context(), w, hb, s.c.cfg.HeartbeatInterval)
	s.c.log.Debug("scheduler stream ended", "framework_id", fwID, "err", err)
	s.c.streamEnded(fwID, stream)
}

// dispatch validates and applies a non-SUBSCRIBE call.
func (s *schedulerAPI) dispatch(call *scheduler.Call, streamID string) *httpError {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	fw, herr := s.c.caller(call, streamID)
	if herr != nil {
		return herr
	}
	switch call.Type {
	case scheduler.Call_TEARDOWN:
		s.c.teardown(fw)
	case scheduler.Call_ACCEPT:
		if call.Accept == nil {
			return errorf(http.StatusBadRequest, "Expecting 'accept' to be present")
		}
		s.c.accept(fw, call.Accept)
	case scheduler.Call_DECLINE:
		if call.Decline == nil {
			return errorf(http.StatusBadRequest, "Expecting 'decline' to be present")
		}
		s.c.decline(fw, call.Decline.OfferIDs, call.Decline.Filters)
	case scheduler.Call_REVIVE:
		s.c.revive(fw)
	case scheduler.Call_SUPPRESS:
		s.c.suppress(fw)
	case scheduler.Call_KILL:
		if call.Kill == nil {
			return errorf(http.StatusBadRequest, "Expecting 'kill' to be present")
		}
		s.c.kill(fw, call.Kill.TaskID.Value, call.Kill.AgentID)
	case scheduler.Call_SHUTDOWN:
		if call.Shutdown == nil {
			return errorf(http.StatusBadRequest, "Expecting 'shutdown' to be present")
		}
		s.c.shutdownCall(fw, call.Shutdown)
	case scheduler.Call_ACKNOWLEDGE:
		return s.c.acknowledge(fw, call.Acknowledge)
	case scheduler.Call_RECONCILE:
		if call.Reconcile == nil {
			return errorf(http.StatusBadRequest, "Expecting 'reconcile' to be present")
		}
		s.c.reconcile(fw, call.Reconcile.Tasks)
	case scheduler.Call_MESSAGE:
		return s.c.frameworkMessage(fw, call.Message)
	case scheduler.Call_REQUEST, scheduler.Call_ACCEPT_INVERSE_OFFERS, scheduler.Call_DECLINE_INVERSE_OFFERS,
		scheduler.Call_RECONCILE_OPERATIONS, scheduler.Call_ACKNOWLEDGE_OPERATION_STATUS:
		// Accepted and ignored: no inverse offers or operations on this agent.
	default:
		return errorf(http.StatusNotImplemented, "Call type %s is not supported", call.Type)
	}
	return nil
}

// caller resolves the framework of a non-SUBSCRIBE call and checks that it
// arrives on the framework's current stream, as a Mesos master does.
func (m *master) caller(call *scheduler.Call, streamID string) (*framework, *httpError) {
	if call.FrameworkID == nil || call.FrameworkID.Value == "" {
		return nil, errorf(http.StatusBadRequest, "Expecting 'framework_id' to be present")
	}
	fw := m.frameworks[call.FrameworkID.Value]
	if fw == nil || fw.sub == nil {
		return nil, errorf(http.StatusForbidden, "Framework cannot be found or is not subscribed")
	}
	if streamID == "" {
		return nil, errorf(http.StatusBadRequest, "All non-subscribe calls should include the 'Mesos-Stream-Id' header")
	}
	if streamID != fw.sub.id {
		return nil, errorf(http.StatusBadRequest,
			"The stream ID '%s' included in this request didn't match the stream ID currently associated with framework ID %s",
			streamID, fw.id)
	}
	return fw, nil
}

func (m *master) frameworkMessage(fw *framework, msg *scheduler.Call_Message) *httpError {
	if msg == nil {
		return errorf(http.StatusBadRequest, "Expecting 'message' to be present")
	}
	if m.agentOf(msg.AgentID.Value) == nil {
		return nil // Mesos drops messages for unknown agents
	}
	if e := fw.executors[execKey{msg.AgentID.Value, msg.ExecutorID.Value}]; e != nil {
		e.sendMessage(msg.Data)
	}
	return nil
}

func (h *host) shutdownCall(fw *framework, s *scheduler.Call_Shutdown) {
	if e := fw.executors[execKey{s.AgentID.Value, s.ExecutorID.Value}]; e != nil {
		h.shutdownExecutor(e)
	}
}
