package embedded

import (
	"bytes"
	"time"
)

// The decisions of reliable status updates and acknowledgements, as pure
// functions of a task's update stream: updates.go records, forwards and
// retries what they decide.

// updateKind is what an update from the executor or the agent is to a
// task's stream.
type updateKind int

const (
	updateNew       updateKind = iota // recorded, and forwarded when it is the oldest pending one
	updateAcked                       // acknowledged already: the executor is told again
	updateDuplicate                   // in flight already: dropped
)

// classifyUpdate tells a new update of a task from a repeated one, by uuid.
func classifyUpdate(acked map[string]bool, pending []pendingUpdate, uuid []byte) updateKind {
	if acked[string(uuid)] {
		return updateAcked
	}
	for _, p := range pending {
		if bytes.Equal(p.status.UUID, uuid) {
			return updateDuplicate
		}
	}
	return updateNew
}

// acceptsAck reports whether an acknowledgement is for the task's oldest
// pending update, the only one forwarded; any other is dropped.
func acceptsAck(pending []pendingUpdate, uuid []byte) bool {
	return len(pending) > 0 && bytes.Equal(pending[0].status.UUID, uuid)
}

// nextBackoff is the retry interval after an unacknowledged forward:
// doubled, capped at maxRetry.
func nextBackoff(d time.Duration) time.Duration { return min(2*d, maxRetry) }

// finishedKept bounds the completed tasks kept per executor for /state; a
// simulated executor keeps fewer (thousands of them run at once).
func finishedKept(sim bool) int {
	if sim {
		return maxSimDone
	}
	return maxDone
}
