//go:build !linux

package embedded

import "errors"

// du is not measured off Linux: sandboxes' disk limits are not enforced.
func du(string, int) (int64, bool, error) {
	return 0, false, errors.New("sandbox disk usage is measured on Linux only")
}
