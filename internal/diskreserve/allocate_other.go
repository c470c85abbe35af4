//go:build !linux

package diskreserve

import (
	"errors"
	"os"
)

// allocate: no fallocate here; the caller writes zeros.
func allocate(*os.File, int64) error { return errors.ErrUnsupported }
