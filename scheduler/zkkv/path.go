package zkkv

import (
	"fmt"
	"strings"

	"github.com/ejcloud/elasticjob/store"
)

// validPath checks the store.KV path rules: "/" or "/seg/seg" with no empty,
// "." or ".." segment and no NUL byte.
func validPath(p string) error {
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

func parent(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

func join(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// under reports whether p is root or one of its descendants.
func under(p, root string) bool {
	if root == "/" || p == root {
		return true
	}
	return len(p) > len(root) && p[len(root)] == '/' && strings.HasPrefix(p, root)
}

// ancestors returns p's proper ancestors below "/", top down.
func ancestors(p string) []string {
	var out []string
	for i := 1; i < len(p); i++ {
		if p[i] == '/' {
			out = append(out, p[:i])
		}
	}
	return out
}

func opName(k store.OpKind) string {
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
