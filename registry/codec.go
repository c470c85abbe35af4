package registry

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/task"
	"github.com/ejcloud/elasticjob/workflow"
)

// The values of a namespace's tree hold names as the namespace knows them
// (an app's appName "etl", a job's jobName "nightly"), whichever view
// wrote them: a namespace's tree reads the same to its API and to an
// operator's tool. The scheduler's view (layout.go) sees keys ("pay~etl",
// "pay~nightly") in paths, so it qualifies the names in the values it
// reads and unqualifies those it writes, here and only here. Task ids are
// scheduler-wide already (they carry the job's key) and stay as they are.

// encodeAt is the stored form of v written at p.
func encodeAt(p string, v any) []byte {
	if ns := nsOfPath(p); ns != "" {
		v = localize(ns, v)
	}
	return mustJSON(v)
}

// decodeAt reads the value stored at p into v: this scheduler's JSON, or
// the form the original ElasticJob-Cloud left it in (legacy.go). A value
// that is neither is a *DecodeError naming p (damage.go).
func decodeAt(p string, b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		handled, lerr := legacyDecode(p, b, v)
		if !handled {
			return decodeErr(p, err)
		}
		if lerr != nil {
			return decodeErr(p, lerr)
		}
	} else {
		legacyAmend(b, v)
	}
	if ns := nsOfPath(p); ns != "" {
		globalize(ns, v)
	}
	return nil
}

func qualify(ns, s string) string {
	if s == "" || strings.Contains(s, namespace.Sep) {
		return s
	}
	return namespace.Key(ns, s)
}

func unqualify(ns, s string) string {
	if rest, ok := strings.CutPrefix(s, ns+namespace.Sep); ok {
		return rest
	}
	return s
}

// mapNames applies f to every name a value holds, in place (v is a
// pointer to a copy the caller owns).
func mapNames(v any, f func(string) string) {
	switch v := v.(type) {
	case *app.Config:
		v.AppName = f(v.AppName)
	case *jobs.Config:
		v.JobName, v.AppName = f(v.JobName), f(v.AppName)
	case *workflow.Config:
		v.Name = f(v.Name)
		v.Nodes = slices.Clone(v.Nodes)
		for i := range v.Nodes {
			v.Nodes[i].Job = f(v.Nodes[i].Job)
		}
	case *queue.Ready:
		v.Runs = slices.Clone(v.Runs)
		for i := range v.Runs {
			v.Runs[i].IdempotencyKey = f(v.Runs[i].IdempotencyKey)
		}
		if r := v.Relaunch; r != nil && r.Key != "" {
			rc := *r
			rc.Key = f(r.Key)
			v.Relaunch = &rc
		}
	case *queue.Failover:
		v.RunKey = f(v.RunKey)
	case *task.Entry:
		v.RunKey = f(v.RunKey)
	case *task.RunRecord:
		v.JobName, v.Workflow = f(v.JobName), f(v.Workflow)
	case *workflow.Run:
		v.Workflow = f(v.Workflow)
		v.Nodes = slices.Clone(v.Nodes)
		for i := range v.Nodes {
			v.Nodes[i].Job, v.Nodes[i].RunKey = f(v.Nodes[i].Job), f(v.Nodes[i].RunKey)
		}
	}
}

// globalize qualifies the names of a value read from namespace ns's tree.
func globalize(ns string, v any) { mapNames(v, func(s string) string { return qualify(ns, s) }) }

// localize returns a copy of v with the names as namespace ns knows them.
func localize(ns string, v any) any {
	f := func(s string) string { return unqualify(ns, s) }
	switch v := v.(type) {
	case app.Config:
		mapNames(&v, f)
		return v
	case jobs.Config:
		mapNames(&v, f)
		return v
	case workflow.Config:
		mapNames(&v, f)
		return v
	case queue.Ready:
		mapNames(&v, f)
		return v
	case queue.Failover:
		mapNames(&v, f)
		return v
	case task.Entry:
		mapNames(&v, f)
		return v
	case task.RunRecord:
		mapNames(&v, f)
		return v
	case workflow.Run:
		mapNames(&v, f)
		return v
	}
	return v
}

// putJSON, setJSON and createJSON are store.Put, Set and Create of a value
// in its stored form at p.
func putJSON(p string, v any) store.Op { return store.Put(p, encodeAt(p, v)) }

func setJSON(p string, v any, version int64) store.Op { return store.Set(p, encodeAt(p, v), version) }

func createJSON(p string, v any) store.Op { return store.Create(p, encodeAt(p, v)) }
