package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/store"
)

// Errors of the repair of a damaged entry (the API maps ErrNotDamaged to
// 409 and ErrBadRepair to 400).
var (
	// ErrNotDamaged: the entry decodes (or is gone): it is changed
	// through its own API, not as a damaged entry.
	ErrNotDamaged = errors.New("not a damaged entry")
	// ErrBadRepair: the replacement does not decode or is not valid.
	ErrBadRepair = errors.New("bad replacement")
)

// damagedNode reads the entry at store path p and checks that it is a
// record the registry decodes and that it does not decode now.
func (r *Registry) damagedNode(ctx context.Context, p string) (store.Node, error) {
	if err := store.ValidatePath(p); err != nil {
		return store.Node{}, err
	}
	n, err := r.phys.Get(ctx, p)
	if errors.Is(err, store.ErrNotFound) {
		return n, fmt.Errorf("%w: nothing is stored at %s", ErrNotDamaged, p)
	}
	if err != nil {
		return n, err
	}
	ok, derr := DecodeStored(p, n.Value)
	if !ok {
		return n, fmt.Errorf("%w: %s holds no record the registry decodes", ErrNotDamaged, p)
	}
	if derr == nil {
		r.damage.Forget(p)
		return n, fmt.Errorf("%w: %s decodes: change it through its own API", ErrNotDamaged, p)
	}
	return n, nil
}

// RemoveDamaged deletes the damaged entry at store path p (and whatever
// lies below it), if it is still the value that did not decode.
func (r *Registry) RemoveDamaged(ctx context.Context, p string) error {
	n, err := r.damagedNode(ctx, p)
	if err != nil {
		return err
	}
	ops := []store.Op{store.Delete(p, n.Version)}
	if gen, ok := readyGenAt(p); ok {
		ops = append(ops, store.Put(gen, nil)) // a ready entry's generation ends with it (ready_gen.go)
	}
	if err := r.commitPhys(ctx, ops...); err != nil {
		return fmt.Errorf("registry: remove %s: %w", p, err)
	}
	r.damage.Forget(p)
	return nil
}

// RepairDamaged replaces the damaged entry at store path p with value,
// which must decode as the record stored there, and for an app or a job be
// valid as the API's register would take it (with the name its path
// gives).
func (r *Registry) RepairDamaged(ctx context.Context, p string, value []byte) error {
	n, err := r.damagedNode(ctx, p)
	if err != nil {
		return err
	}
	if _, derr := DecodeStored(p, value); derr != nil {
		var de *DecodeError
		if errors.As(derr, &de) {
			derr = de.Err
		}
		return fmt.Errorf("%w: it does not decode as the record at %s: %w", ErrBadRepair, p, derr)
	}
	value, err = validateRepair(p, value)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadRepair, err)
	}
	if err := r.commitPhys(ctx, store.Set(p, value, n.Version)); err != nil {
		return fmt.Errorf("registry: repair %s: %w", p, err)
	}
	r.damage.Forget(p)
	return nil
}

// validateRepair checks an app or a job as the API would register it
// (absent fields take their defaults) and returns the value to store: the
// app or job with its defaults, any other record as it was given.
func validateRepair(p string, value []byte) ([]byte, error) {
	name := lastSegment(p)
	switch SubtreeOf(p) {
	case "config/app":
		c := app.Default()
		if err := json.Unmarshal(value, &c); err != nil {
			return nil, err
		}
		if c.AppName != name {
			return nil, fmt.Errorf("appName '%s' is not the name its path gives, '%s'", c.AppName, name)
		}
		return mustJSON(c), c.Validate()
	case "state/ready":
		// The generation is the registry's (ready_gen.go), not the
		// replacement's: one given would make every later write of the
		// entry fail its check. The next write that reads the entry
		// records it.
		var m map[string]json.RawMessage
		if json.Unmarshal(value, &m) == nil && m["gen"] != nil {
			delete(m, "gen")
			return mustJSON(m), nil
		}
		return value, nil
	case "config/job":
		c := jobs.Default()
		if err := json.Unmarshal(value, &c); err != nil {
			return nil, err
		}
		if c.JobName != name {
			return nil, fmt.Errorf("jobName '%s' is not the name its path gives, '%s'", c.JobName, name)
		}
		return mustJSON(c), c.Validate()
	}
	return value, nil
}

// readyGenAt is the generation node of the ready entry at store path p
// (ok false: p is no ready entry), in p's tree.
func readyGenAt(p string) (string, bool) {
	if SubtreeOf(p) != "state/ready" {
		return "", false
	}
	name := lastSegment(p)
	return strings.TrimSuffix(p, ReadyPath+"/"+name) + readyGenOf(name), true
}

// commitPhys commits ops on the store itself, behind the fence.
func (r *Registry) commitPhys(ctx context.Context, ops ...store.Op) error {
	if r.fence != nil {
		ops = append(r.fence(), ops...)
	}
	return r.phys.Commit(ctx, ops...)
}
