//go:build !linux

package embedded

import "os"

// removeTree is os.RemoveAll where tenants are not isolated.
func removeTree(dir string) error { return os.RemoveAll(dir) }
