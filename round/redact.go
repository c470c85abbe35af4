package round

import (
	"regexp"
	"slices"
	"strings"

	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/queue"
)

// OtherWork is how a wait shown to a reader names running or waiting work
// of a namespace the reader has no role in: never its job, task id, app or
// namespace, only what it holds and until when.
const OtherWork = "another namespace's work"

// The phrases of a wait's message that name work of another namespace than
// the waiting entry's (decide.go's describe, lending.go, preempt.go);
// holders are words() and Summary, rewritten from the holders themselves.
var (
	// "behind the reservation of the older execution of job pay~x, which holds …"
	olderRE = regexp.MustCompile(`older (?:execution|failover shard \d+) of job ([A-Za-z0-9._~-]+), which`)
	// "… but namespace pay needs its guarantee back at T for its cron fire of job nightly (…"
	fireRE = regexp.MustCompile(`namespace ([a-z0-9-]+) needs its guarantee back at (\S+) for its cron fire of job [A-Za-z0-9._-]+ \(`)
	// "job nightly of namespace pay" (what a lent capacity or a preemption names)
	ofNamespaceRE = regexp.MustCompile(`job [A-Za-z0-9._-]+ of namespace ([a-z0-9-]+)`)
)

// Redact is w as a reader sees it who may read only the namespaces sees
// admits: each holder of another namespace becomes OtherWork, with its
// shards, resources, start and expected end but no job name or task id,
// and the message loses every name of such work and of its namespace. A
// wait that names nothing hidden comes back as it is.
func Redact(w queue.Wait, sees func(ns string) bool) queue.Wait {
	msg := w.Message
	var hidden []string // raw names of hidden work, a last net for any phrase not listed above
	if len(w.Holders) > 0 {
		hs := make([]queue.Holder, len(w.Holders))
		for i, h := range w.Holders {
			if !h.Other && !sees(namespace.Of(h.Job)) {
				old := holderWords(h)
				if strings.Contains(h.Job, namespace.Sep) {
					hidden = append(hidden, h.Job)
				}
				hidden = append(hidden, h.TaskID)
				h.Job, h.TaskID, h.Other = OtherWork, "", true
				msg = strings.ReplaceAll(msg, old, holderWords(h))
			}
			hs[i] = h
		}
		w.Holders = hs
	}
	msg = olderRE.ReplaceAllStringFunc(msg, func(m string) string {
		if sees(namespace.Of(olderRE.FindStringSubmatch(m)[1])) {
			return m
		}
		return "older work of another namespace, which"
	})
	msg = fireRE.ReplaceAllStringFunc(msg, func(m string) string {
		sm := fireRE.FindStringSubmatch(m)
		if sees(sm[1]) {
			return m
		}
		return "another namespace needs its guarantee back at " + sm[2] + " for one of its cron fires ("
	})
	msg = ofNamespaceRE.ReplaceAllStringFunc(msg, func(m string) string {
		if sees(ofNamespaceRE.FindStringSubmatch(m)[1]) {
			return m
		}
		return OtherWork
	})
	slices.SortFunc(hidden, func(a, b string) int { return len(b) - len(a) }) // a task id before its job's key
	for _, name := range hidden {
		if name != "" {
			msg = strings.ReplaceAll(msg, name, OtherWork)
		}
	}
	w.Message = msg
	return w
}

// Localize is w as a reader of namespace ns reads it: ns's own jobs are
// named as ns knows them (nightly, not pay~nightly), in the holders and
// in the message; other namespaces' keys are left (Redact hides them
// from whoever may not read them).
func Localize(w queue.Wait, ns string) queue.Wait {
	if ns == "" || ns == namespace.Default {
		return w
	}
	prefix := ns + namespace.Sep
	msg := w.Message
	if len(w.Holders) > 0 {
		hs := make([]queue.Holder, len(w.Holders))
		for i, h := range w.Holders {
			if !h.Other && strings.HasPrefix(h.Job, prefix) {
				old := holderWords(h)
				h.Job = strings.TrimPrefix(h.Job, prefix)
				msg = strings.ReplaceAll(msg, old, holderWords(h))
			}
			hs[i] = h
		}
		w.Holders = hs
	}
	w.Message = strings.ReplaceAll(msg, "job "+prefix, "job ")
	return w
}
