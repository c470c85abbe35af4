package task

import "strings"

// Who ended the tasks of a deleted job (Entry.KilledBy): their end is
// worded "killed (job deleted)", and a DAEMON job's resident tasks are no
// transient executions (history wrote each as a failed run).
const (
	KilledByDeletion       = "(job deleted)"
	KilledByDaemonDeletion = "(daemon job deleted)"
)

// KilledMessage is the message a task killed on someone's behalf (its
// entry's KilledBy: the API's kill of one execution, or the job's
// deletion) ends with, from the engine's own message.
func KilledMessage(by, msg string) string {
	if by == KilledByDeletion || by == KilledByDaemonDeletion {
		return "killed (job deleted)"
	}
	if msg == "" || strings.EqualFold(strings.TrimSpace(msg), "killed") {
		return "killed by " + by
	}
	return "killed by " + by + ": " + msg
}
