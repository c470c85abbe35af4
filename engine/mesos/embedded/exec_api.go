package embedded

import (
	"crypto/sha256"
	"errors"
	"mime"
	"net/http"
	"sync"

	"github.com/ejcloud/elasticjob/internal/mesosframe"
	mesos "github.com/mesos/mesos-go/api/v1/lib"
	execpb "github.com/mesos/mesos-go/api/v1/lib/executor"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// executorAPI serves the v1 executor API (/api/v1/executor): executors'
// subscriptions and calls, checked against the executor's token, handed to
// the cluster under Cluster.mu. It keeps no state of its own.
type executorAPI struct{ c *Cluster }

// handleExecutor serves POST /api/v1/executor.
func (x *executorAPI) handleExecutor(w http.ResponseWriter, r *http.Request) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == typeRecordIO && r.Method == http.MethodPost {
		x.handleBatch(w, r)
		return
	}
	var call execpb.Call
	done, herr := x.admit(r)
	if herr != nil {
		writeError(w, herr)
		return
	}
	reqCodec, herr := readCall(w, r, &call)
	done()
	if herr != nil {
		writeError(w, herr)
		return
	}
	if call.Type == execpb.Call_SUBSCRIBE {
		x.serveExecutor(w, r, &call, reqCodec)
		return
	}
	x.c.mu.Lock()
	herr = x.executorCall(x.c.agents[0], &call, bearer(r))
	x.c.mu.Unlock()
	if herr != nil {
		writeError(w, herr)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// findExecutor resolves the executor of a call made to agent a with the
// given bearer token: a call without a token is refused 401, one whose
// token is not that executor's 403 (an executor speaks only for itself;
// auth.go). An executor an earlier version started has no token to check.
func (x *executorAPI) findExecutor(a *agent, call *execpb.Call, token string) (*executor, *httpError) {
	fw := x.c.frameworks[call.FrameworkID.Value]
	if fw == nil {
		return nil, errorf(http.StatusBadRequest, "Framework %s not found", call.FrameworkID.Value)
	}
	e := fw.executors[execKey{a.id, call.ExecutorID.Value}]
	if e == nil || e.state == execTerminated {
		return nil, errorf(http.StatusBadRequest, "Executor %s of framework %s not found", call.ExecutorID.Value, fw.id)
	}
	if e.token == (tokenHash{}) && e.recovered {
		// Started by an earlier version of the agent, which gave it no
		// token: it is taken back as before (recoverRun logged it) and
		// leaves when it exits; every executor started since has one.
		return e, nil
	}
	if token == "" {
		return nil, errorf(http.StatusUnauthorized, "Unauthorized: executor calls need the executor's token (Authorization: Bearer $%s)", ExecutorTokenEnv)
	}
	if !e.token.matches(token) {
		x.c.log.Warn("refused an executor call with another executor's or no valid token", "executor_id", e.id,
			"call", call.Type.String())
		return nil, errorf(http.StatusForbidden, "Forbidden: the token is not executor %s's", e.id)
	}
	return e, nil
}

// ownTask refuses an update an executor sends for a task the agent did
// not launch into it: another executor's (403), or one the agent does not
// hold (400). An executor's own token is within reach of a compromised
// executor, and every id the agent took would be a task in its memory and
// an open records file below its checkpoint until it ended; every task an
// executor legitimately reports is one the agent holds, the recovered
// executor's too (its checkpoint lists them), and one removed since had
// every update acknowledged by the scheduler.
func ownTask(e *executor, st mesos.TaskStatus) *httpError {
	id := st.TaskID.Value
	if t := e.fw.tasks[id]; t != nil && t.exec != nil && t.exec != e {
		return errorf(http.StatusForbidden, "Forbidden: task %s is not executor %s's", id, e.id)
	}
	if e.tasks[id] == nil {
		return errorf(http.StatusBadRequest, "Task %s is not one this agent launched into executor %s", id, e.id)
	}
	return nil
}

func (x *executorAPI) serveExecutor(w http.ResponseWriter, r *http.Request, call *execpb.Call, req codec) {
	format, err := negotiateStream(r, req)
	if err != nil {
		writeError(w, errorf(http.StatusNotAcceptable, "%v", err))
		return
	}
	x.c.mu.Lock()
	e, herr := x.findExecutor(x.c.agents[0], call, bearer(r))
	if herr == nil && e.detached {
		herr = errorf(http.StatusServiceUnavailable, "Agent is stopping: subscribe to its next run")
	}
	if herr != nil {
		x.c.mu.Unlock()
		writeError(w, herr)
		return
	}
	s := newEventStream(format, "")
	x.executorSubscribed(e, s, call.Subscribe)
	x.c.mu.Unlock()
	err = s.serve(r.Context(), w, nil, 0)
	x.c.mu.Lock()
	defer x.c.mu.Unlock()
	if e.stream == s {
		x.c.log.Info("executor disconnected", "executor_id", e.id, "err", err)
		e.stream = nil
	}
}

// executorSubscribed attaches a (new) executor connection: SUBSCRIBED,
// unacknowledged updates replayed, queued tasks launched.
func (x *executorAPI) executorSubscribed(e *executor, s executorConn, sub *execpb.Call_Subscribe) {
	if e.stream != nil {
		e.stream.close()
	}
	e.stream = s
	if e.state == execLaunching {
		e.state = execRunning
	}
	x.c.log.Info("executor subscribed", "framework_id", e.fw.id, "executor_id", e.id)
	e.send(&execpb.Event{Type: execpb.Event_SUBSCRIBED, Subscribed: &execpb.Event_Subscribed{
		ExecutorInfo:  e.info,
		FrameworkInfo: e.fw.info,
		AgentInfo:     x.c.agentInfo(e.agent),
		ContainerID:   &mesos.ContainerID{Value: e.containerID},
	}})
	known := map[string]bool{}
	if sub != nil {
		for _, u := range sub.UnacknowledgedUpdates {
			herr := validTaskID(u.Status.TaskID.Value)
			if herr == nil {
				herr = validUpdateSize(u.Status)
			}
			if herr == nil {
				herr = ownTask(e, u.Status)
			}
			if herr == nil {
				herr = checkUpdateBound(e, u.Status, nil)
			}
			if herr != nil {
				x.c.log.Warn("dropped a re-subscribing executor's update it may not send", "executor_id", e.id, "err", herr.msg)
				continue
			}
			x.executorUpdate(e, u.Status)
		}
		for _, ti := range sub.UnacknowledgedTasks {
			known[ti.TaskID.Value] = true
		}
		e.dropQueued(known)
	}
	if e.recovered && !e.resubscribed {
		e.resubscribed = true
		x.c.dropUnknownLaunched(e, known)
	}
	if e.state == execTerminating {
		e.send(&execpb.Event{Type: execpb.Event_SHUTDOWN})
		return
	}
	for _, id := range e.killsDue {
		if t := e.tasks[id]; t != nil && !isTerminal(t.state) {
			e.send(&execpb.Event{Type: execpb.Event_KILL, Kill: &execpb.Event_Kill{TaskID: t.info.TaskID}})
		}
	}
	e.killsDue = nil
	e.flushQueue()
}

// dropUnknownLaunched ends the tasks a recovered executor was sent (the
// agent checkpointed that) but does not know: the agent stopped before
// the LAUNCH reached it. As in Mesos, they are lost (dropped for a
// partition-aware framework).
func (m *master) dropUnknownLaunched(e *executor, known map[string]bool) {
	state := lossState(e.fw.partitionAware(), lossDropped)
	for _, t := range lostInRestart(e.liveTasks(), known) {
		m.agentUpdate(t, state, mesos.REASON_AGENT_RESTARTED, "Task launched during agent restart")
	}
}

// executorCall applies a non-SUBSCRIBE call an executor made to agent a.
func (x *executorAPI) executorCall(a *agent, call *execpb.Call, token string) *httpError {
	e, herr := x.callingExecutor(a, call, token)
	if herr != nil {
		return herr
	}
	if herr := checkCall(e, call, nil); herr != nil {
		x.refused(e, herr)
		return herr
	}
	x.applyCall(a, e, call)
	return nil
}

// callingExecutor is the subscribed executor a call comes from.
func (x *executorAPI) callingExecutor(a *agent, call *execpb.Call, token string) (*executor, *httpError) {
	e, herr := x.findExecutor(a, call, token)
	if herr != nil {
		return nil, herr
	}
	if e.state == execLaunching {
		return nil, errorf(http.StatusForbidden, "Executor is not subscribed")
	}
	return e, nil
}

// maxExecutorUpdates bounds the new updates (uuids) a task takes from its
// executor, and maxUpdateBytes an update's data and message: each is a
// record the agent (root) appends below its checkpoint, in a data
// directory no tenant's disk limit measures, and an update held in memory
// until the scheduler acknowledges it, so an executor sending update after
// update for its own task would fill both. Ours sends three or four a
// task, each of a few hundred bytes.
const (
	maxExecutorUpdates = 64
	maxUpdateBytes     = 1 << 20
)

// maxQueuedForMessages is how much of the scheduler's event stream may be
// waiting to be written before executors' messages (which are not
// acknowledged) are dropped: an executor may send them as fast as it
// likes, each up to maxUpdateBytes, and the stream's queue is in this
// process's memory.
const maxQueuedForMessages = 64 << 20

// checkUpdateBound refuses a new update of a task past maxExecutorUpdates;
// batched counts the new ones of each task checked before it in the same
// request (nil: none). A resent update (its uuid known) is not new.
func checkUpdateBound(e *executor, st mesos.TaskStatus, batched map[string]int) *httpError {
	t := e.tasks[st.TaskID.Value]
	if classifyUpdate(t.acked, t.pending, st.UUID) != updateNew {
		return nil
	}
	if t.fromExecutor+batched[st.TaskID.Value] >= maxExecutorUpdates {
		return errorf(http.StatusTooManyRequests, "Task %s has had %d updates from its executor, the most one task may", st.TaskID.Value, maxExecutorUpdates)
	}
	if batched != nil {
		batched[st.TaskID.Value]++
	}
	return nil
}

// checkCall refuses an UPDATE or MESSAGE call of executor e that may not
// be applied; it changes nothing. batched is checkUpdateBound's.
func checkCall(e *executor, call *execpb.Call, batched map[string]int) *httpError {
	switch call.Type {
	case execpb.Call_UPDATE:
		if call.Update == nil {
			return errorf(http.StatusBadRequest, "Expecting 'update' to be present")
		}
		if herr := validateExecutorUpdate(call); herr != nil {
			return herr
		}
		if herr := ownTask(e, call.Update.Status); herr != nil {
			return herr
		}
		return checkUpdateBound(e, call.Update.Status, batched)
	case execpb.Call_MESSAGE:
		if call.Message == nil {
			return errorf(http.StatusBadRequest, "Expecting 'message' to be present")
		}
		if n := len(call.Message.Data); n > maxUpdateBytes {
			return errorf(http.StatusBadRequest, "Message of %d bytes, more than %d", n, maxUpdateBytes)
		}
		return nil
	}
	return errorf(http.StatusBadRequest, "Call type %s is not supported", call.Type)
}

// refused logs a call of executor e that checkCall refused: a refusal
// is a fault of the executor, or an executor probing the agent.
func (x *executorAPI) refused(e *executor, herr *httpError) {
	x.c.log.Warn("refused an executor's call", "framework_id", e.fw.id, "executor_id", e.id, "code", herr.code, "err", herr.msg)
}

// applyCall applies a call checkCall passed.
func (x *executorAPI) applyCall(a *agent, e *executor, call *execpb.Call) {
	if call.Type == execpb.Call_UPDATE {
		x.executorUpdate(e, call.Update.Status)
		return
	}
	if sub := e.fw.sub; sub != nil && sub.queuedBytes() > maxQueuedForMessages {
		// Messages are not acknowledged, and a Mesos agent drops one it
		// cannot deliver: dropped here rather than queued without end.
		if !e.messagesDropped {
			x.c.log.Warn("dropping an executor's messages: its scheduler's stream is backed up", "executor_id", e.id,
				"queued_bytes", sub.queuedBytes())
		}
		e.messagesDropped = true
		return
	}
	e.messagesDropped = false
	e.fw.send(&scheduler.Event{Type: scheduler.Event_MESSAGE, Message: &scheduler.Event_Message{
		AgentID: mesos.AgentID{Value: a.id}, ExecutorID: mesos.ExecutorID{Value: e.id}, Data: call.Message.Data,
	}})
}

// maxBatch bounds the calls one batch may carry.
const maxBatch = 1024

// handleBatch serves several UPDATE and MESSAGE calls of one executor in
// one request (our executor's, when its updates queue while one is in
// flight): a RecordIO body (Content-Type application/recordio) of calls in
// Message-Content-Type's codec. The calls are checked first and applied
// in their order only if every one passes, under one hold of the
// cluster's lock, so the answer is one: 202 when all were applied, an
// error when none was (the executor then sends them one by one, each
// getting its own answer). A Mesos agent answers such a request 415,
// and so did this one before it took batches.
func (x *executorAPI) handleBatch(w http.ResponseWriter, r *http.Request) {
	done, herr := x.admit(r)
	if herr != nil {
		writeError(w, herr)
		return
	}
	batch, herr := readBatch(w, r)
	done()
	if herr != nil {
		writeError(w, herr)
		return
	}
	x.c.mu.Lock()
	herr = x.executorBatch(x.c.agents[0], batch, bearer(r))
	x.c.mu.Unlock()
	if herr != nil {
		writeError(w, herr)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

func (x *executorAPI) executorBatch(a *agent, batch []*execpb.Call, token string) *httpError {
	first := batch[0]
	for i, call := range batch {
		if call.FrameworkID != first.FrameworkID || call.ExecutorID != first.ExecutorID {
			return errorf(http.StatusBadRequest, "Call %d of the batch is not of framework %s's executor %s", i, first.FrameworkID.Value, first.ExecutorID.Value)
		}
	}
	e, herr := x.callingExecutor(a, first, token)
	if herr != nil {
		return herr
	}
	batched := map[string]int{}
	for i, call := range batch {
		if herr := checkCall(e, call, batched); herr != nil {
			x.refused(e, herr)
			return errorf(herr.code, "Call %d of the batch: %s", i, herr.msg)
		}
	}
	for _, call := range batch {
		x.applyCall(a, e, call)
	}
	return nil
}

// readBatch reads a batch's calls.
func readBatch(w http.ResponseWriter, r *http.Request) ([]*execpb.Call, *httpError) {
	c, ok := codecFor(r.Header.Get("Message-Content-Type"))
	if !ok {
		return nil, errorf(http.StatusUnsupportedMediaType, "Expecting 'Message-Content-Type' of %s or %s", typeJSON, typeProtobuf)
	}
	body, err := readBody(http.MaxBytesReader(w, r.Body, maxBody), r.ContentLength)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "Failed to read body: %v", err)
	}
	recs, err := mesosframe.Records(body, maxBatch)
	if errors.Is(err, mesosframe.ErrTooManyRecords) {
		return nil, errorf(http.StatusBadRequest, "More than %d calls in one batch", maxBatch)
	}
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "Failed to parse body: %v", err)
	}
	batch := make([]*execpb.Call, 0, len(recs))
	for i, rec := range recs {
		call := new(execpb.Call)
		if err := c.decode(rec, call); err != nil {
			return nil, errorf(http.StatusBadRequest, "Failed to parse record %d into Call: %v", i, err)
		}
		batch = append(batch, call)
	}
	if len(batch) == 0 {
		return nil, errorf(http.StatusBadRequest, "Expecting at least one call")
	}
	return batch, nil
}

// validateExecutorUpdate applies the Mesos agent's rules for UPDATE calls.
func validateExecutorUpdate(call *execpb.Call) *httpError {
	st := call.Update.Status
	if herr := validTaskID(st.TaskID.Value); herr != nil {
		return herr
	}
	if herr := validUpdateSize(st); herr != nil {
		return herr
	}
	switch {
	case len(st.UUID) == 0:
		return errorf(http.StatusBadRequest, "Expecting 'uuid' to be present")
	case len(st.UUID) != 16:
		return errorf(http.StatusBadRequest, "Invalid 'uuid': expecting 16 bytes")
	case st.ExecutorID != nil && st.ExecutorID.Value != call.ExecutorID.Value:
		return errorf(http.StatusBadRequest, "ExecutorID in Call: %s does not match ExecutorID in TaskStatus: %s",
			call.ExecutorID.Value, st.ExecutorID.Value)
	case st.GetSource() != mesos.SOURCE_EXECUTOR:
		return errorf(http.StatusBadRequest, "Received Call from executor %s with invalid source, expecting 'SOURCE_EXECUTOR'",
			call.ExecutorID.Value)
	case st.GetState() == mesos.TASK_STAGING:
		return errorf(http.StatusBadRequest, "Received TASK_STAGING from executor %s which is not allowed",
			call.ExecutorID.Value)
	}
	return nil
}

// validUpdateSize refuses an update whose data and message are past
// maxUpdateBytes.
func validUpdateSize(st mesos.TaskStatus) *httpError {
	if n := len(st.Data) + len(st.GetMessage()); n > maxUpdateBytes {
		return errorf(http.StatusBadRequest, "Update of task %s carries %d bytes of data and message, more than %d", st.TaskID.Value, n, maxUpdateBytes)
	}
	return nil
}

// validTaskID refuses a task id that is not a Mesos task id. The agent
// (root, under Tenancy) keeps a task's records in a file named by its id
// below the checkpoint (taskMeta), where an id such as ../../../etc/x
// would name a file anywhere; ownTask already takes only tasks the agent
// holds, and this check keeps an executor's id from ever reaching a path
// should that change.
func validTaskID(id string) *httpError {
	if err := validateID(id); err != nil {
		return errorf(http.StatusBadRequest, "Task ID %q is invalid: %v", id, err)
	}
	return nil
}

// executorUpdate routes an executor's status update into its task's
// stream; ownTask passed it, so the task is the executor's.
func (x *executorAPI) executorUpdate(e *executor, st mesos.TaskStatus) {
	t := e.tasks[st.TaskID.Value]
	t.launched = true
	if classifyUpdate(t.acked, t.pending, st.UUID) == updateNew {
		t.fromExecutor++
	}
	x.c.statusUpdate(t, st, true)
}

// The executor API answers every process of the host (a task reaches the
// agent on loopback), and a call's body, up to maxBody, is read into the
// agent's memory, the scheduler's. So a call's token is checked before its
// body is read: it must be a live executor's (or the call may come from an
// executor an earlier version started, which has none); and one token has
// at most maxExecReads bodies read at a time, so that even a compromised
// executor, which holds its token, holds at most that many buffers. A
// task holds no token: its calls are refused before a byte is read.

// maxExecReads bounds the calls of one executor whose bodies are read at
// once. Our executor has one call in flight at a time (its updates queue
// into the next batch), its subscription's besides.
const maxExecReads = 8

// execReads counts the bodies being read per token.
type execReads struct {
	mu sync.Mutex
	n  map[tokenHash]int
}

// admit lets a call's body be read: 401 unless its bearer token is a live
// executor's or an executor without a token is live, 429 past
// maxExecReads calls of one token. done ends the read. The token is looked
// up by its SHA-256 in the live executors' index (host.liveTokens), one
// map read under the cluster's lock whatever the number of executors: the
// lookup's time depends on the hash only, which tells a caller nothing of
// any executor's token.
func (x *executorAPI) admit(r *http.Request) (done func(), herr *httpError) {
	var key tokenHash
	if tok := bearer(r); tok != "" {
		key = sha256.Sum256([]byte(tok))
	}
	x.c.mu.Lock()
	known := key != (tokenHash{}) && x.c.liveTokens[key] > 0
	legacy := x.c.legacyLive > 0
	x.c.mu.Unlock()
	switch {
	case known:
	case legacy: // findExecutor judges the call once read; these share one count
		key = tokenHash{}
	default:
		return nil, errorf(http.StatusUnauthorized, "Unauthorized: executor calls need a running executor's token (Authorization: Bearer $%s)", ExecutorTokenEnv)
	}
	reads := &x.c.execReads
	reads.mu.Lock()
	defer reads.mu.Unlock()
	if reads.n[key] >= maxExecReads {
		return nil, errorf(http.StatusTooManyRequests, "Too many calls of this executor at once (%d)", maxExecReads)
	}
	if reads.n == nil {
		reads.n = map[tokenHash]int{}
	}
	reads.n[key]++
	return func() {
		reads.mu.Lock()
		defer reads.mu.Unlock()
		if reads.n[key]--; reads.n[key] == 0 {
			delete(reads.n, key)
		}
	}, nil
}
