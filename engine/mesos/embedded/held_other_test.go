//go:build !linux

package embedded

import "errors"

func holdRemoved(bool) error { return errors.New("linux only") }
