package bytesize

import (
	"fmt"
	"strconv"
	"strings"
)

var units = []struct {
	name string
	size int64
}{
	{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1},
}

// Format renders n with the largest binary unit that divides it evenly
// ("1 GiB", "1536 KiB"), else in bytes ("1000 bytes").
func Format(n int64) string {
	for _, u := range units[:4] {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// Parse reads "1GiB", "1 GiB", "512MiB", "100MB", "4096" (bytes); it accepts
// k/m/g/t shorthands for the binary units.
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range units {
		for _, name := range []string{u.name, shorthand(u.name)} {
			if name != "" && len(t) > len(name) && strings.EqualFold(t[len(t)-len(name):], name) {
				mult, t = u.size, strings.TrimSpace(t[:len(t)-len(name)])
				goto num
			}
		}
	}
num:
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || (mult > 1 && n > (1<<62)/mult) {
		return 0, fmt.Errorf("bad size %q: want e.g. 1GiB, 512MiB or a byte count", s)
	}
	return n * mult, nil
}

func shorthand(unit string) string {
	if strings.HasSuffix(unit, "iB") {
		return unit[:1] // "G" for GiB
	}
	return ""
}
