//go:build e2e

package hostile

import (
	"encoding/json"
	"slices"
)

func jsonInto(b []byte, v any) bool { return json.Unmarshal(b, v) == nil }

// keys are a map's keys, sorted.
func keys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
