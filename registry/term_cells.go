package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/ejcloud/elasticjob/store"
)

// packageKeyPath holds the key of package URL tokens (package packages'
// own value), shared by every scheduler instance of one registry. It
// belongs to no namespace.
const packageKeyPath = "/packages/key"

// webhookCAPath holds the CRD admission webhook's certificate authority
// (package crd's own value: its certificate and key, PEM): made by the
// first scheduler that serves the webhook, read by every other and after
// every restart. It belongs to no namespace.
const webhookCAPath = "/kube/webhook/ca"

// Cell is one registry node a component owns, in that component's own
// format: it can read it and create it once, and nothing else of the
// registry. Its writes are not fenced: every instance, leading or not,
// may create it (the first one wins).
type Cell struct {
	kv   store.KV
	path string
}

// PackageKey is the cell of the package token key (packageKeyPath).
func (tm Term) PackageKey() Cell { return Cell{kv: tm.r.phys, path: packageKeyPath} }

// WebhookCA is the cell of the CRD webhook's certificate authority
// (webhookCAPath).
func (tm Term) WebhookCA() Cell { return Cell{kv: tm.r.phys, path: webhookCAPath} }

// Path is the cell's node, for messages.
func (c Cell) Path() string { return c.path }

// Get reads the cell; ok is false when it was never created.
func (c Cell) Get(ctx context.Context) (value []byte, ok bool, err error) {
	n, err := c.kv.Get(ctx, c.path)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("registry: read %s: %w", c.path, err)
	}
	return n.Value, true, nil
}

// Create sets the cell's value unless it has one; created is false when
// it had (another instance created it first: Get reads that one).
func (c Cell) Create(ctx context.Context, value []byte) (created bool, err error) {
	err = c.kv.Commit(ctx, store.Create(c.path, value))
	if errors.Is(err, store.ErrExists) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("registry: create %s: %w", c.path, err)
	}
	return true, nil
}
