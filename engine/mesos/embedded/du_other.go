//go:build !linux

package embedded

import "errors"

// du is not measured off Linux: sandboxes' disk limits are not enforced.
func du(string, int) (int64, string, error) {
	return 0, "", errors.New("sandbox disk usage is measured on Linux only")
}
