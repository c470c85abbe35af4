package memory

import (
	"fmt"
	"strings"

	"github.com/ejcloud/elasticjob/store"
)

// ValidatePath reports whether p is a store path: "/" or a slash-separated
// list of non-empty segments after a leading slash, with no trailing slash,
// no "." or ".." segment and no NUL byte. The error wraps store.ErrBadPath.
func ValidatePath(p string) error {
	if p == "/" {
		return nil
	}
	if p == "" || p[0] != '/' || p[len(p)-1] == '/' || strings.IndexByte(p, 0) >= 0 {
		return fmt.Errorf("%q: %w", p, store.ErrBadPath)
	}
	for seg := range strings.SplitSeq(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%q: %w", p, store.ErrBadPath)
		}
	}
	return nil
}

// Parent returns the parent of a valid path; the parent of "/" is "/".
func Parent(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// Base returns the last segment of a valid path ("" for "/").
func Base(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

// Join returns the path of the child name of parent.
func Join(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}

// Under reports whether p is root or one of its descendants.
func Under(p, root string) bool {
	if root == "/" || p == root {
		return true
	}
	return len(p) > len(root) && p[len(root)] == '/' && strings.HasPrefix(p, root)
}

// OpName names an op kind for error messages ("create", "set", ...).
func OpName(k store.OpKind) string {
	switch k {
	case store.OpCreate:
		return "create"
	case store.OpPut:
		return "put"
	case store.OpSet:
		return "set"
	case store.OpDelete:
		return "delete"
	case store.OpCheck:
		return "check"
	}
	return fmt.Sprintf("op(%d)", int(k))
}

// CheckOps validates every op of a batch before anything is applied: known
// kind and valid path. The root "/" always exists and may only be checked;
// writing or deleting it is a bad path.
func CheckOps(ops []store.Op) error {
	for _, op := range ops {
		name := OpName(op.Kind)
		if op.Kind < store.OpCreate || op.Kind > store.OpCheck {
			return fmt.Errorf("%s %s: unknown op kind: %w", name, op.Path, store.ErrBadPath)
		}
		if err := ValidatePath(op.Path); err != nil {
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
