package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ejcloud/elasticjob/identity"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/store"
)

// tokensPath holds the namespaces' API tokens, /auth/tokens/{id}: each an
// identity.APIToken with the hash of its secret, never the secret.
const tokensPath = "/auth/tokens"

// ErrTokenNotFound: no such token in the namespace.
var ErrTokenNotFound = errors.New("token not found")

// AddToken keeps a new token's record.
func (tn Tenancy) AddToken(ctx context.Context, t identity.APIToken) error {
	ops := []store.Op{store.Create(tokensPath+"/"+t.ID, mustJSON(t))}
	if t.Namespace != namespace.Default {
		ops = append([]store.Op{store.Check(nsPath(t.Namespace), store.AnyVersion)}, ops...) // not into a namespace deleted meanwhile
	}
	return tn.r.phys.Commit(ctx, ops...)
}

// Token reads a token's record by id.
func (tn Tenancy) Token(ctx context.Context, id string) (identity.APIToken, error) {
	var t identity.APIToken
	n, err := tn.r.phys.Get(ctx, tokensPath+"/"+id)
	if errors.Is(err, store.ErrNotFound) {
		return t, fmt.Errorf("%w: %s", ErrTokenNotFound, id)
	}
	if err != nil {
		return t, err
	}
	if err := json.Unmarshal(n.Value, &t); err != nil {
		return t, decodeErr(n.Path, err)
	}
	return t, nil
}

// Tokens lists a namespace's tokens (without their hashes), oldest first.
func (tn Tenancy) Tokens(ctx context.Context, ns string) ([]identity.APIToken, error) {
	nodes, err := tn.r.phys.List(ctx, tokensPath)
	if err != nil {
		return nil, err
	}
	out := []identity.APIToken{}
	for _, n := range nodes {
		var t identity.APIToken
		if err := json.Unmarshal(n.Value, &t); err != nil {
			tn.r.setAsideAt(n, decodeErr(n.Path, err))
			continue
		}
		if t.Namespace == ns {
			t.Hash = ""
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b identity.APIToken) int {
		return cmpOr(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// RevokeToken deletes a namespace's token.
func (tn Tenancy) RevokeToken(ctx context.Context, ns, id string) error {
	t, err := tn.Token(ctx, id)
	if err == nil && t.Namespace != ns {
		err = fmt.Errorf("%w: %s", ErrTokenNotFound, id)
	}
	if err != nil {
		return err
	}
	return tn.r.phys.Commit(ctx, store.Delete(tokensPath+"/"+id, store.AnyVersion))
}

// dropTokensOps deletes every token of a namespace (with the namespace).
func (r *Registry) dropTokensOps(ctx context.Context, ns string) ([]store.Op, error) {
	ts, err := r.Tenancy().Tokens(ctx, ns)
	var ops []store.Op
	for _, t := range ts {
		ops = append(ops, store.Delete(tokensPath+"/"+t.ID, store.AnyVersion))
	}
	return ops, err
}
