package memory

import (
	"fmt"

	"github.com/ejcloud/elasticjob/store"
)

// OpName names an op kind for error messages ("create", "set", ...).
func OpName(k store.OpKind) string { return k.String() }

// CheckOps validates every op of a batch before anything is applied: known
// kind and valid path. The root "/" always exists and may only be checked;
// writing or deleting it is a bad path.
func CheckOps(ops []store.Op) error {
	for _, op := range ops {
		name := OpName(op.Kind)
		if op.Kind < store.OpCreate || op.Kind > store.OpCheck {
			return fmt.Errorf("%s %s: unknown op kind: %w", name, op.Path, store.ErrBadPath)
		}
		if err := store.ValidatePath(op.Path); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if op.Path == "/" && op.Kind != store.OpCheck {
			return fmt.Errorf("%s /: the root is not writable: %w", name, store.ErrBadPath)
		}
	}
	return nil
}

// OpError wraps a store sentinel with the op and path that failed
// ("set /x: store: version conflict").
func OpError(op store.Op, err error) error {
	return fmt.Errorf("%s %s: %w", OpName(op.Kind), op.Path, err)
}
