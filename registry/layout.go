package registry

import (
	"fmt"
	"strings"

	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/store"
)

// NamespacesPath holds one node per namespace, /namespaces/{name} (its
// namespace.Record), and below each but the default one that namespace's
// own tree, laid out as the default namespace's is at the root:
//
//	/config/job/nightly                          the default namespace's job "nightly"
//	/namespaces/pay                              namespace pay's record
//	/namespaces/pay/config/job/nightly           pay's job "nightly"
//	/namespaces/pay/state/running/nightly/nightly@-@0
//
// So the default namespace keeps the original's layout (its tools read
// it as before), and a namespace's tree is one subtree, apart from every
// other's on every store.
//
// The registry reads and writes through one of two views of that tree,
// both built from the table below and nowhere else:
//
//   - the scheduler's (New): every namespace at once, each name a key
//     (namespace.Key: "pay~nightly") in the paths of the default layout, so
//     the leader's loops see one tree of unique names:
//     /config/job/pay~nightly is /namespaces/pay/config/job/nightly;
//   - one namespace's (In): that namespace's tree as if it were the root,
//     with its own names, which is what the API serves a request in it.
const NamespacesPath = "/namespaces"

// A namespaced root: the registry directories every namespace has, and how
// many path segments below each are names (a job's, an app's, a workflow's,
// a running key {job}@-@{item}, a task id, a trigger's key) that the
// scheduler's view qualifies with the namespace. Everything else (/ha,
// /auth, /packages, /state/leader_term, /state/producer, the framework id)
// is the scheduler's own and has no namespace.
type nsRoot struct {
	path  string
	names int
}

var nsRoots = []nsRoot{
	{AppsPath, 1},
	{JobsPath, 1},
	{WorkflowsPath, 1},
	{ReadyPath, 1},
	{readyGenPath, 1},
	{RunningPath, 2},
	{RetiringPath, 2},
	{failoverPath, 2},
	{disabledAppPath, 1},
	{disabledJobPath, 1},
	{disabledWorkflowPath, 1},
	{runsPath, 1},
	{gangPath, 1},
	{waitingPath + "/ready", 1},
	{waitingPath + "/failover", 2},
	{TriggerKeysPath, 1},
	{WorkflowRunsPath, 1}, // /state/workflow/{name}/{runId}: run ids are not names
	{workflowKeysPath, 1}, // /state/workflow_keys/{name}/{key}: a key of the workflow's own
	{TailsPath, 2},
	{RegisteredJobPath, 1},
	{ChangedJobPath, 1},
}

// rootOf returns the namespaced root p is or lies under, and the segments
// below it.
func rootOf(p string) (nsRoot, []string, bool) {
	for _, r := range nsRoots {
		if p == r.path {
			return r, nil, true
		}
		if strings.HasPrefix(p, r.path) && p[len(r.path)] == '/' {
			return r, strings.Split(p[len(r.path)+1:], "/"), true
		}
	}
	return nsRoot{}, nil, false
}

// isAncestorOfRoot reports whether p is "/" or a directory above a
// namespaced root ("/config", "/state/disable").
func isAncestorOfRoot(p string) bool {
	if p == "/" {
		return true
	}
	for _, r := range nsRoots {
		if len(r.path) > len(p) && strings.HasPrefix(r.path, p) && r.path[len(p)] == '/' {
			return true
		}
	}
	return false
}

// isRoot reports whether p is a namespaced root itself.
func isRoot(p string) bool {
	r, segs, ok := rootOf(p)
	return ok && len(segs) == 0 && r.path == p
}

// nsPath is the directory of namespace ns's record and tree.
func nsPath(ns string) string { return NamespacesPath + "/" + ns }

// physical maps a path of the scheduler's view to the store's: a path
// whose names are keys of namespace ns moves under /namespaces/{ns}, with
// the names as ns knows them. A path of the default namespace, or of no
// namespace, is its own.
func physical(p string) (string, error) {
	r, segs, ok := rootOf(p)
	if !ok || len(segs) == 0 {
		return p, nil
	}
	ns := ""
	for i := 0; i < r.names && i < len(segs); i++ {
		kns, name, qualified := strings.Cut(segs[i], namespace.Sep)
		switch {
		case !qualified && ns == "":
			continue
		case !qualified || (ns != "" && kns != ns) || kns == namespace.Default || namespace.ValidateName(kns) != nil:
			return "", fmt.Errorf("%w: %s mixes namespaces or names a bad one", store.ErrBadPath, p)
		}
		ns, segs[i] = kns, name
	}
	if ns == "" {
		return p, nil
	}
	return nsPath(ns) + r.path + "/" + strings.Join(segs, "/"), nil
}

// logical maps a store path to the scheduler's view; false for the paths
// the view does not show (a namespace's record, the directories of its
// tree above and at its roots). The launcher reads every ready entry
// through it each round: it builds the path in one allocation.
func logical(p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, NamespacesPath+"/")
	if !ok {
		return p, p != NamespacesPath
	}
	slash := strings.IndexByte(rest, '/')
	if slash <= 0 || rest[:slash] == namespace.Default {
		return "", false
	}
	ns, sub := rest[:slash], rest[slash:]
	r, ok := rootUnder(sub)
	if !ok {
		return "", false
	}
	var b strings.Builder
	b.Grow(len(sub) + r.names*(len(ns)+1))
	b.WriteString(r.path)
	segs := sub[len(r.path)+1:]
	for i := 0; segs != ""; i++ {
		seg, more, found := strings.Cut(segs, "/")
		b.WriteByte('/')
		if i < r.names {
			b.WriteString(ns)
			b.WriteString(namespace.Sep)
		}
		b.WriteString(seg)
		if !found {
			break
		}
		segs = more
	}
	return b.String(), true
}

// rootUnder is the namespaced root p lies strictly under.
func rootUnder(p string) (nsRoot, bool) {
	for _, r := range nsRoots {
		if len(p) > len(r.path)+1 && strings.HasPrefix(p, r.path) && p[len(r.path)] == '/' {
			return r, true
		}
	}
	return nsRoot{}, false
}

// namesAt reports whether the children of p (a path of a namespaced root
// or below it) are names the scheduler's view qualifies.
func namesAt(p string) bool {
	r, segs, ok := rootOf(p)
	return ok && len(segs) < r.names
}

// nsOfPath is the namespace whose key names a path of the scheduler's
// view ("" for a path of the default namespace or of none).
func nsOfPath(p string) string {
	r, segs, ok := rootOf(p)
	if !ok || len(segs) == 0 || r.names == 0 {
		return ""
	}
	if ns, _, ok := strings.Cut(segs[0], namespace.Sep); ok {
		return ns
	}
	return ""
}

// scoped maps a path of one namespace's view to the store's: its roots
// move under /namespaces/{ns}; the scheduler's own paths stay.
func scoped(ns, p string) string {
	if _, _, ok := rootOf(p); ok || (p != "/" && isAncestorOfRoot(p)) {
		return nsPath(ns) + p
	}
	return p
}
