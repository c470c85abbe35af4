package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/store"
)

// Errors of the namespaces' records.
var (
	ErrNamespaceNotFound = errors.New("namespace not found")
	ErrNamespaceNotEmpty = errors.New("namespace not empty")
)

func namespaceNotFound(name string) error {
	return fmt.Errorf("%w: namespace '%s' does not exist; an admin creates it with PUT /api/namespaces/%s", ErrNamespaceNotFound, name, name)
}

// NamespaceExists reports whether a namespace exists: the default one
// always does, any other once its record was written.
func (tn Tenancy) NamespaceExists(ctx context.Context, name string) (bool, error) {
	if name == namespace.Default {
		return true, nil
	}
	if namespace.ValidateName(name) != nil {
		return false, nil
	}
	_, err := tn.r.phys.Get(ctx, nsPath(name))
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Namespace reads a namespace's record (the default one has one even
// when none was written: no guarantee, no limit, weight 1).
func (tn Tenancy) Namespace(ctx context.Context, name string) (namespace.Record, error) {
	if namespace.ValidateName(name) != nil {
		return namespace.Record{}, namespaceNotFound(name)
	}
	n, err := tn.r.phys.Get(ctx, nsPath(name))
	switch {
	case errors.Is(err, store.ErrNotFound) && name == namespace.Default:
		return namespace.Record{Name: name}, nil
	case errors.Is(err, store.ErrNotFound):
		return namespace.Record{}, namespaceNotFound(name)
	case err != nil:
		return namespace.Record{}, err
	}
	return decodeRecord(n)
}

func decodeRecord(n store.Node) (namespace.Record, error) {
	rec := namespace.Record{Name: lastSegment(n.Path)}
	if len(n.Value) > 0 {
		if err := json.Unmarshal(n.Value, &rec); err != nil {
			return rec, decodeErr(n.Path, err)
		}
	}
	rec.Name = lastSegment(n.Path)
	return rec, nil
}

// Namespaces lists every namespace's record, the default one first.
func (tn Tenancy) Namespaces(ctx context.Context) ([]namespace.Record, error) {
	nodes, err := tn.r.phys.List(ctx, NamespacesPath)
	if err != nil {
		return nil, fmt.Errorf("registry: list the namespaces: %w", err)
	}
	out := []namespace.Record{{Name: namespace.Default}}
	for _, n := range nodes {
		rec, err := decodeRecord(n)
		if tn.r.setAsideAt(n, err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if rec.Name == namespace.Default {
			out[0] = rec
			continue
		}
		out = append(out, rec)
	}
	slices.SortFunc(out[1:], func(a, b namespace.Record) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// PutNamespace creates a namespace or replaces its record; created
// reports which.
func (tn Tenancy) PutNamespace(ctx context.Context, rec namespace.Record) (created bool, err error) {
	if err := rec.Validate(); err != nil {
		return false, err
	}
	exists, err := tn.NamespaceExists(ctx, rec.Name)
	if err != nil {
		return false, err
	}
	if rec.Name == namespace.Default {
		_, gerr := tn.r.phys.Get(ctx, nsPath(rec.Name))
		exists = gerr == nil
	}
	return !exists, tn.r.phys.Commit(ctx, store.Put(nsPath(rec.Name), mustJSON(rec)))
}

// Holdings is what a namespace holds: a namespace is deleted only when
// it holds nothing.
type Holdings struct {
	Apps      []string `json:"apps"`
	Jobs      []string `json:"jobs"`
	Workflows []string `json:"workflows"`
	// Running counts its running tasks (a retiring one too: it runs until its
	// replacement does), Queued its pending executions and failed shards
	// waiting to run again.
	Running int `json:"runningTasks"`
	Queued  int `json:"queued"`
}

// Empty reports whether nothing is held.
func (h Holdings) Empty() bool {
	return len(h.Apps)+len(h.Jobs)+len(h.Workflows)+h.Running+h.Queued == 0
}

// String names what is held, for a refusal.
func (h Holdings) String() string {
	var parts []string
	list := func(kind string, names []string) {
		if len(names) > 0 {
			parts = append(parts, fmt.Sprintf("%d %s (%s)", len(names), plural(kind, len(names)), strings.Join(names, ", ")))
		}
	}
	list("app", h.Apps)
	list("job", h.Jobs)
	list("workflow", h.Workflows)
	if h.Running > 0 {
		parts = append(parts, fmt.Sprintf("%d running %s", h.Running, plural("task", h.Running)))
	}
	if h.Queued > 0 {
		parts = append(parts, fmt.Sprintf("%d queued %s", h.Queued, plural("execution", h.Queued)))
	}
	return strings.Join(parts, ", ")
}

func plural(s string, n int) string {
	if n == 1 {
		return s
	}
	return s + "s"
}

// Holdings reads what this registry's namespace holds (an In view).
func (tn Tenancy) Holdings(ctx context.Context) (Holdings, error) {
	var h Holdings
	var err error
	if h.Apps, err = tn.r.kv.Children(ctx, AppsPath); err != nil {
		return h, err
	}
	if h.Jobs, err = tn.r.kv.Children(ctx, JobsPath); err != nil {
		return h, err
	}
	if h.Workflows, err = tn.r.kv.Children(ctx, WorkflowsPath); err != nil {
		return h, err
	}
	running, err := tn.r.Work().RunningTasks(ctx)
	if err != nil {
		return h, err
	}
	for _, m := range running {
		h.Running += len(m)
	}
	retiring, err := tn.r.Work().RetiringTasks(ctx)
	if err != nil {
		return h, err
	}
	for _, m := range retiring { // each runs until its replacement does
		h.Running += len(m)
	}
	ready, err := tn.r.Work().ReadyQueue(ctx)
	if err != nil {
		return h, err
	}
	for _, rd := range ready {
		h.Queued += rd.Count
	}
	fo, err := tn.r.Work().FailoverQueue(ctx)
	h.Queued += len(fo)
	return h, err
}

// DeleteNamespace removes an empty namespace's record, tree (what is left
// of its state: counts, wait reasons), API tokens and secrets; the default namespace and a
// namespace that holds anything stay (ErrNamespaceNotEmpty names what).
func (tn Tenancy) DeleteNamespace(ctx context.Context, name string) error {
	if name == namespace.Default {
		return fmt.Errorf("%w: the default namespace always exists", ErrNamespaceNotEmpty)
	}
	exists, err := tn.NamespaceExists(ctx, name)
	if err != nil {
		return err
	}
	if !exists {
		return namespaceNotFound(name)
	}
	h, err := tn.r.In(name).Tenancy().Holdings(ctx)
	if err != nil {
		return err
	}
	if !h.Empty() {
		return fmt.Errorf("%w: namespace '%s' holds %s: delete them first", ErrNamespaceNotEmpty, name, h)
	}
	ops, err := tn.r.dropTokensOps(ctx, name)
	if err != nil {
		return err
	}
	ops = append(ops, dropSecretsOps(name)...)
	ops = append(ops, dropCalendarsOps(name)...)
	return tn.r.phys.Commit(ctx, append(ops, store.Delete(nsPath(name), store.AnyVersion))...)
}
