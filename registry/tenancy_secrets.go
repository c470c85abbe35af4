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
func (tn Tenancy) PutSecret(ctx context.Context, s secrets.Sealed, version int64) error {
	var ops []store.Op
	if s.Namespace != namespace.Default {
		ops = append(ops, store.Check(nsPath(s.Namespace), store.AnyVersion)) // not into a namespace deleted meanwhile
	}
	if version == NewSecret {
		ops = append(ops, store.Create(secretPath(s.Namespace, s.Name), mustJSON(s)))
	} else {
		ops = append(ops, store.Set(secretPath(s.Namespace, s.Name), mustJSON(s), version))
	}
	return tn.r.phys.Commit(ctx, ops...)
}

// Secret reads a namespace's sealed secret and its stored version.
func (tn Tenancy) Secret(ctx context.Context, ns, name string) (secrets.Sealed, int64, error) {
	return readNamed[secrets.Sealed](ctx, tn.r, secretPath(ns, name),
		func() error { return fmt.Errorf("%w: no secret '%s' in namespace '%s'", ErrSecretNotFound, name, ns) })
}

// Secrets lists a namespace's secrets, sealed, by name.
func (tn Tenancy) Secrets(ctx context.Context, ns string) ([]secrets.Sealed, error) {
	return listNamed(ctx, tn.r, secretsPath+"/"+ns, func(s secrets.Sealed) string { return s.Name })
}

// SecretNamespaces lists the namespaces that hold secrets.
func (tn Tenancy) SecretNamespaces(ctx context.Context) ([]string, error) {
	nodes, err := tn.r.phys.List(ctx, secretsPath)
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
func (tn Tenancy) DeleteSecret(ctx context.Context, ns, name string) error {
	if _, _, err := tn.Secret(ctx, ns, name); err != nil {
		return err
	}
	return tn.r.phys.Commit(ctx, store.Delete(secretPath(ns, name), store.AnyVersion))
}

// dropSecretsOps deletes every secret of a namespace (with the namespace).
func dropSecretsOps(ns string) []store.Op {
	return []store.Op{store.Delete(secretsPath+"/"+ns, store.AnyVersion)}
}

// readNamed reads one named JSON record of a namespace (a secret, a
// calendar) and its stored version; notFound words its absence.
func readNamed[T any](ctx context.Context, r *Registry, path string, notFound func() error) (T, int64, error) {
	var v T
	n, err := r.phys.Get(ctx, path)
	if errors.Is(err, store.ErrNotFound) {
		return v, 0, notFound()
	}
	if err != nil {
		return v, 0, err
	}
	if err := json.Unmarshal(n.Value, &v); err != nil {
		return v, 0, decodeErr(n.Path, err)
	}
	return v, n.Version, nil
}

// listNamed lists the named JSON records under dir, by name; a record that
// does not decode is set aside as damaged, the others are listed.
func listNamed[T any](ctx context.Context, r *Registry, dir string, name func(T) string) ([]T, error) {
	nodes, err := r.phys.List(ctx, dir)
	if errors.Is(err, store.ErrNotFound) {
		return []T{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(nodes))
	for _, n := range nodes {
		var v T
		if err := json.Unmarshal(n.Value, &v); err != nil {
			r.setAsideAt(n, decodeErr(n.Path, err))
			continue
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b T) int { return strings.Compare(name(a), name(b)) })
	return out, nil
}
