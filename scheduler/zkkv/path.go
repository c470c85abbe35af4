package zkkv

import (
	"fmt"

	"github.com/ejcloud/elasticjob/store"
)

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
