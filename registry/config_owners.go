package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/store"
)

// ownersPath records which Kubernetes object owns a definition,
// /kube/owners/{kind}/{key} (kind app, job or workflow; key the
// scheduler-wide namespace.Key of its name): a definition with a record is
// changed only by reconciling its object (docs/kubernetes.md). It is the
// scheduler's own tree, outside every namespace's view.
const ownersPath = "/kube/owners"

// Owner is the Kubernetes object a definition comes from.
type Owner struct {
	Kind      string `json:"kind"` // CloudApp, CloudJob, CloudWorkflow
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
}

// String names the object as kubectl does: CloudJob pay/nightly.
func (o Owner) String() string { return o.Kind + " " + o.Namespace + "/" + o.Name }

func ownerPath(kind, ns, name string) string {
	return ownersPath + "/" + kind + "/" + namespace.Key(ns, name)
}

// SetOwner records the object that owns a definition of kind in ns.
func (cf Config) SetOwner(ctx context.Context, kind, ns, name string, o Owner) error {
	if err := cf.r.phys.Commit(ctx, store.Put(ownerPath(kind, ns, name), mustJSON(o))); err != nil {
		return fmt.Errorf("registry: set owner of %s %s: %w", kind, namespace.Key(ns, name), err)
	}
	return nil
}

// OwnerOf returns the object owning a definition, if one does.
func (cf Config) OwnerOf(ctx context.Context, kind, ns, name string) (Owner, bool, error) {
	var o Owner
	n, err := cf.r.phys.Get(ctx, ownerPath(kind, ns, name))
	if errors.Is(err, store.ErrNotFound) {
		return o, false, nil
	}
	if err != nil {
		return o, false, err
	}
	if err := json.Unmarshal(n.Value, &o); err != nil {
		return o, false, decodeErr(n.Path, err)
	}
	return o, true, nil
}

// Owned lists the definitions of kind owned by objects, by their
// scheduler-wide keys.
func (cf Config) Owned(ctx context.Context, kind string) (map[string]Owner, error) {
	nodes, err := cf.r.phys.List(ctx, ownersPath+"/"+kind)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Owner, len(nodes))
	for _, n := range nodes {
		var o Owner
		if err := json.Unmarshal(n.Value, &o); err != nil {
			cf.r.setAsideAt(n, decodeErr(n.Path, err))
			continue
		}
		out[store.Base(n.Path)] = o
	}
	return out, nil
}

// DropOwner forgets a definition's owner (its object was deleted).
func (cf Config) DropOwner(ctx context.Context, kind, ns, name string) error {
	return cf.r.phys.Commit(ctx, store.Delete(ownerPath(kind, ns, name), store.AnyVersion))
}
