package store

import (
	"fmt"
	"strings"
)

// ValidatePath reports whether p is a store path: "/" or a slash-separated
// list of non-empty segments after a leading slash, with no trailing slash,
// no "." or ".." segment and no NUL byte. The error wraps ErrBadPath.
func ValidatePath(p string) error {
	if p == "/" {
		return nil
	}
	if p == "" || p[0] != '/' || p[len(p)-1] == '/' || strings.IndexByte(p, 0) >= 0 {
		return fmt.Errorf("%q: %w", p, ErrBadPath)
	}
	for seg := range strings.SplitSeq(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%q: %w", p, ErrBadPath)
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
