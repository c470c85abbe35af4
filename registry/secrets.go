package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/secrets"
	"github.com/ejcloud/elasticjob/store"
)

// secretsPath holds the namespaces' secrets, /secrets/{namespace}/{name}:
// each a secrets.Sealed (the value encrypted; docs/tenancy.md). It is the
// scheduler's own tree, outside every namespace's view, read and written
// only through the methods below.
const secretsPath = "/secrets"

// ErrSecretNotFound: no such secret in the namespace.
var ErrSecretNotFound = errors.New("secret not found")

func secretPath(ns, name string) string { return secretsPath + "/" + ns + "/" + name }

// NewSecret is PutSecret's version for a secret that must not exist yet,
// so two writers of a new name do not both succeed.
const NewSecret int64 = -2

// PutSecret stores a sealed secret, made or overwritten; version is the
// stored one's (as Secret read it), or NewSecret.
func (r *Registry) PutSecret(ctx context.Context, s secrets.Sealed, version int64) error {
	var ops []store.Op
	if s.Namespace != namespace.Default {
		ops = append(ops, store.Check(nsPath(s.Namespace), store.AnyVersion)) // not into a namespace deleted meanwhile
	}
	if version == NewSecret {
		ops = append(ops, store.Create(secretPath(s.Namespace, s.Name), mustJSON(s)))
	} else {
		ops = append(ops, store.Set(secretPath(s.Namespace, s.Name), mustJSON(s), version))
	}
	return r.phys.Commit(ctx, ops...)
}

// Secret reads a namespace's sealed secret and its stored version.
func (r *Registry) Secret(ctx context.Context, ns, name string) (secrets.Sealed, int64, error) {
	var s secrets.Sealed
	n, err := r.phys.Get(ctx, secretPath(ns, name))
	if errors.Is(err, store.ErrNotFound) {
		return s, 0, fmt.Errorf("%w: no secret '%s' in namespace '%s'", ErrSecretNotFound, name, ns)
	}
	if err != nil {
		return s, 0, err
	}
	if err := json.Unmarshal(n.Value, &s); err != nil {
		return s, 0, decodeErr(n.Path, err)
	}
	return s, n.Version, nil
}

// Secrets lists a namespace's secrets, sealed, by name.
func (r *Registry) Secrets(ctx context.Context, ns string) ([]secrets.Sealed, error) {
	nodes, err := r.phys.List(ctx, secretsPath+"/"+ns)
	if errors.Is(err, store.ErrNotFound) {
		return []secrets.Sealed{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]secrets.Sealed, 0, len(nodes))
	for _, n := range nodes {
		var s secrets.Sealed
		if err := json.Unmarshal(n.Value, &s); err != nil {
			r.setAsideAt(n, decodeErr(n.Path, err))
			continue
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b secrets.Sealed) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// SecretNamespaces lists the namespaces that hold secrets.
func (r *Registry) SecretNamespaces(ctx context.Context) ([]string, error) {
	nodes, err := r.phys.List(ctx, secretsPath)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	var out []string
	for _, n := range nodes {
		out = append(out, n.Path[strings.LastIndexByte(n.Path, '/')+1:])
	}
	slices.Sort(out)
	return out, err
}

// DeleteSecret deletes a namespace's secret.
func (r *Registry) DeleteSecret(ctx context.Context, ns, name string) error {
	if _, _, err := r.Secret(ctx, ns, name); err != nil {
		return err
	}
	return r.phys.Commit(ctx, store.Delete(secretPath(ns, name), store.AnyVersion))
}

// dropSecretsOps deletes every secret of a namespace (with the namespace).
func dropSecretsOps(ns string) []store.Op {
	return []store.Op{store.Delete(secretsPath+"/"+ns, store.AnyVersion)}
}
