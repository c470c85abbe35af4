package api

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ejcloud/elasticjob/identity"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/round"
	"github.com/gin-gonic/gin"
)

// What an answer shows of another namespace's work. A route
// answers about its request's namespace, where the caller has a role; but
// some answers also touch work of other namespaces: a wait names the
// running work that holds what it needs, and the cluster page lists every
// namespace's pods. Such work is shown, to a caller without a role in its
// namespace, as round.OtherWork ("another namespace's work") with what it
// holds and until when, never its job name, task id, app or namespace.
// The admin, and a caller with a role there, see the names. Every such
// answer goes through the caller's redactor, here.

// redactor hides from an answer the work of namespaces its caller has no
// role in.
type redactor struct{ p identity.Principal }

func redactorOf(c *gin.Context) redactor { return redactor{principal(c)} }

// redactorFrom is redactorOf for a handler's context (the request's gin
// context, or one derived from it); without a caller, everything of
// another namespace than the request's is hidden.
func redactorFrom(ctx context.Context) redactor {
	if c, ok := ctx.(*gin.Context); ok {
		return redactorOf(c)
	}
	p, _ := ctx.Value(ctxPrincipal).(identity.Principal)
	if !p.Admin && p.Roles == nil {
		p.Roles = map[string]identity.Role{nsFrom(ctx): identity.View}
	}
	return redactor{p}
}

// sees reports whether the caller may read namespace ns's work by name.
func (r redactor) sees(ns string) bool { return r.p.Admin || r.p.Can(ns, false) }

// wait is a recorded wait as the caller may read it.
func (r redactor) wait(w queue.Wait) queue.Wait {
	if r.p.Admin {
		return w
	}
	return round.Redact(w, r.sees)
}

// taskNamespace is the namespace of a task id (its job's key is before
// the first "@-@"); ok false when s is no task id.
func taskNamespace(s string) (string, bool) {
	job, _, ok := strings.Cut(s, "@-@")
	if !ok || job == "" {
		return "", false
	}
	return namespace.Of(job), true
}

// tree redacts an answer of the engine's own shape (the cluster page):
// every object naming a task ("taskId") of a namespace the caller may not
// read keeps only its figures, flags and state, and says it is
// round.OtherWork ("otherNamespace": true).
func (r redactor) tree(v any) (any, error) {
	if r.p.Admin {
		return v, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("redact: %w", err)
	}
	var t any
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("redact: %w", err)
	}
	return r.walk(t), nil
}

// keptStrings are the string fields an object of another namespace's task
// keeps: its state, never a name.
var keptStrings = map[string]bool{"phase": true, "state": true}

func (r redactor) walk(v any) any {
	switch t := v.(type) {
	case []any:
		for i := range t {
			t[i] = r.walk(t[i])
		}
	case map[string]any:
		if id, ok := t["taskId"].(string); ok {
			if ns, ok := taskNamespace(id); ok && !r.sees(ns) {
				return otherTask(t)
			}
		}
		for k, e := range t {
			t[k] = r.walk(e)
		}
	}
	return v
}

// otherTask is what is shown of a task of another namespace: its numbers
// (resources), flags and state; its name, if it has one, is round.OtherWork
// too (what the console shows).
func otherTask(t map[string]any) map[string]any {
	out := map[string]any{"taskId": round.OtherWork, "otherNamespace": true}
	if _, ok := t["name"]; ok {
		out["name"] = round.OtherWork
	}
	for k, e := range t {
		switch e := e.(type) {
		case float64, bool:
			out[k] = e
		case string:
			if keptStrings[k] {
				out[k] = e
			}
		}
	}
	return out
}
