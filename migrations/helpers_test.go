package migrations_test

import (
	"io/fs"
	"sort"
)

func fsGlob(fsys fs.FS) ([]string, error) {
	m, err := fs.Glob(fsys, "*.sql")
	sort.Strings(m)
	return m, err
}
