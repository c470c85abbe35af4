package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
	if err := r.commitPhys(ctx, store.Delete(p, n.Version)); err != nil {
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

// commitPhys commits ops on the store itself, behind the fence.
func (r *Registry) commitPhys(ctx context.Context, ops ...store.Op) error {
	if r.fence != nil {
		ops = append(r.fence(), ops...)
	}
	return r.phys.Commit(ctx, ops...)
}
