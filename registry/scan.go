package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/identity"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/jobs/calendar"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/secrets"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/task"
	"github.com/ejcloud/elasticjob/workflow"
)

// scanKind is one kind of stored record: where its values lie and how
// one is decoded. A tree kind lies in every namespace's tree (the default
// one's at the store's root, another's under /namespaces/{ns}); the others
// are the scheduler's own, at the store's root.
type scanKind struct {
	root   string
	depth  int // segments below root of the values
	tree   bool
	decode func(p string, b []byte) error
}

// decodeInto is a decoder of values of type T, as the registry's readers
// decode them.
func decodeInto[T any](p string, b []byte) error {
	var v T
	return decodeAt(p, b, &v)
}

// shardValue decodes a running or failover node the way their readers do:
// a node that is not a shard's ({job}@-@{item}) or holds nothing is
// skipped by them, so it is not damaged.
func shardValue[T any](p string, b []byte) error {
	if _, _, err := jobs.ParseMetaKey(lastSegment(p)); err != nil || len(b) == 0 {
		return nil
	}
	return decodeInto[T](p, b)
}

var scanKinds = []scanKind{
	{AppsPath, 1, true, decodeInto[app.Config]},
	{JobsPath, 1, true, decodeInto[jobs.Config]},
	{WorkflowsPath, 1, true, decodeInto[workflow.Config]},
	{ReadyPath, 1, true, decodeInto[queue.Ready]},
	{RunningPath, 2, true, shardValue[task.Entry]},
	{RetiringPath, 2, true, shardValue[Retiring]},
	{failoverPath, 2, true, shardValue[queue.Failover]},
	{runsPath, 1, true, decodeInto[task.RunState]},
	{TriggerKeysPath, 1, true, decodeInto[task.RunRecord]},
	{WorkflowRunsPath, 1, true, func(p string, b []byte) error {
		if len(b) == 0 {
			return nil
		}
		return decodeInto[WorkflowState](p, b)
	}},
	{WorkflowRunsPath, 2, true, decodeInto[workflow.Run]},
	{workflowKeysPath, 2, true, decodeInto[WorkflowKey]},
	{waitingPath + "/ready", 1, true, decodeInto[queue.Wait]},
	{waitingPath + "/failover", 2, true, func(p string, b []byte) error {
		if len(b) == 0 {
			return nil
		}
		return decodeInto[queue.Wait](p, b)
	}},
	{RegisteredJobPath, 1, true, rfc3339},
	{"/state/producer", 1, false, func(p string, b []byte) error {
		if p != firedPath {
			return nil
		}
		return rfc3339(p, b)
	}},
	{NamespacesPath, 1, false, func(p string, b []byte) error {
		_, err := decodeRecord(store.Node{Path: p, Value: b})
		return err
	}},
	{secretsPath, 2, false, jsonInto[secrets.Sealed]},
	{calendarsPath, 2, false, jsonInto[calendar.Calendar]},
	{tokensPath, 1, false, jsonInto[identity.APIToken]},
	{ownersPath, 2, false, jsonInto[Owner]},
}

// rfc3339 decodes an instant stored as text.
func rfc3339(p string, b []byte) error {
	if _, err := time.Parse(time.RFC3339Nano, string(b)); err != nil {
		return decodeErr(p, err)
	}
	return nil
}

// jsonInto decodes a value of the scheduler's own (not namespaced).
func jsonInto[T any](p string, b []byte) error {
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return decodeErr(p, err)
	}
	return nil
}

// DecodeStored decodes the value b as the record stored at the store path
// p would be, and returns a *DecodeError (errors.Is ErrDamaged) when it
// does not decode; ok is false for a path that holds no record the
// registry decodes (a directory, a flag, a cell of raw bytes).
func DecodeStored(p string, b []byte) (ok bool, err error) {
	k, ok := kindOf(p)
	if !ok {
		return false, nil
	}
	return true, k.decode(p, b)
}

// kindOf finds the kind of record at store path p.
func kindOf(p string) (scanKind, bool) {
	rel, inTree := p, true
	if rest, ok := strings.CutPrefix(p, NamespacesPath+"/"); ok {
		if _, sub, found := strings.Cut(rest, "/"); found {
			rel = "/" + sub
		} else {
			inTree = false
		}
	}
	for _, k := range scanKinds {
		q := p
		if k.tree {
			if !inTree {
				continue
			}
			q = rel
		}
		rest, ok := strings.CutPrefix(q, k.root+"/")
		if ok && strings.Count(rest, "/") == k.depth-1 && !strings.Contains(rest, "//") && rest != "" {
			return k, true
		}
	}
	return scanKind{}, false
}

// Scan walks every record of the store (every namespace's tree and the
// scheduler's own entries), and returns those that do not decode, by
// path. The tracker is brought up to date with it: what it found is
// noted, what it tracked and did not find is forgotten.
func (r *Registry) Scan(ctx context.Context) ([]Damaged, error) {
	trees := []string{""}
	nss, err := children(ctx, r.phys, NamespacesPath)
	if err != nil {
		return nil, fmt.Errorf("registry: scan %s: %w", NamespacesPath, err)
	}
	for _, ns := range nss {
		if ns != namespace.Default {
			trees = append(trees, nsPath(ns))
		}
	}
	found := map[string]bool{}
	var list []Damaged // what was found (returned as it is without a tracker)
	for _, k := range scanKinds {
		prefixes := []string{""}
		if k.tree {
			prefixes = trees
		}
		for _, pre := range prefixes {
			nodes, err := leaves(ctx, r.phys, pre+k.root, k.depth)
			if err != nil {
				return nil, fmt.Errorf("registry: scan %s: %w", pre+k.root, err)
			}
			for _, n := range nodes {
				if err := k.decode(n.Path, n.Value); err != nil {
					found[n.Path] = true
					r.damage.Note(n.Path, n.Value, err)
					list = append(list, Damaged{Path: n.Path, Namespace: NamespaceOfStorePath(n.Path), Subtree: SubtreeOf(n.Path),
						Error: decodeMessage(err), Size: len(n.Value)})
				}
			}
		}
	}
	for _, p := range r.damage.paths() {
		if _, known := kindOf(p); known && !found[p] {
			r.damage.Forget(p)
		}
	}
	if r.damage == nil {
		slices.SortFunc(list, func(a, b Damaged) int { return strings.Compare(a.Path, b.Path) })
		return list, nil
	}
	return r.damage.List(), nil
}

// Recheck reads again each entry the tracker holds and forgets those
// removed or repaired since (a few reads: the metric's scrape calls it).
func (r *Registry) Recheck(ctx context.Context) error {
	for _, p := range r.damage.paths() {
		n, err := r.phys.Get(ctx, p)
		if errors.Is(err, store.ErrNotFound) {
			r.damage.Forget(p)
			continue
		}
		if err != nil {
			return fmt.Errorf("registry: recheck %s: %w", p, err)
		}
		if _, derr := DecodeStored(p, n.Value); derr == nil {
			r.damage.Forget(p)
		} else {
			r.damage.Note(p, n.Value, derr)
		}
	}
	return nil
}

// children is kv.Children, nothing for a missing path.
func children(ctx context.Context, kv store.KV, p string) ([]string, error) {
	names, err := kv.Children(ctx, p)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return names, err
}

// leaves lists the nodes depth segments below p.
func leaves(ctx context.Context, kv store.KV, p string, depth int) ([]store.Node, error) {
	if depth <= 1 {
		nodes, err := kv.List(ctx, p)
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil
		}
		return nodes, err
	}
	names, err := children(ctx, kv, p)
	if err != nil {
		return nil, err
	}
	var out []store.Node
	for _, c := range names {
		nodes, err := leaves(ctx, kv, p+"/"+c, depth-1)
		if err != nil {
			return nil, err
		}
		out = append(out, nodes...)
	}
	return out, nil
}
