package ejctl

import (
	"encoding/json"
	"fmt"
	"sort"
)

// FieldDiff is one field that differs: its path (props.x for a prop),
// and the current and desired values as JSON text ("" when absent).
type FieldDiff struct {
	Field string `json:"field"`
	From  string `json:"from,omitempty"`
	To    string `json:"to,omitempty"`
}

func (d FieldDiff) String() string {
	from, to := d.From, d.To
	if from == "" {
		from = "(absent)"
	}
	if to == "" {
		to = "(absent)"
	}
	return fmt.Sprintf("%s: %s → %s", d.Field, from, to)
}

// Diff compares two configs through their JSON forms: every member, and
// every member of a nested object (props) one by one, sorted by path.
func Diff(current, desired any) ([]FieldDiff, error) {
	a, err := flatten(current)
	if err != nil {
		return nil, err
	}
	b, err := flatten(desired)
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var out []FieldDiff
	for k := range keys {
		if a[k] != b[k] {
			out = append(out, FieldDiff{Field: k, From: a[k], To: b[k]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out, nil
}

// flatten maps each leaf of v's JSON object to its JSON text; an empty
// nested object contributes nothing (absent props equal no props).
func flatten(v any) (map[string]string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("diff: %w", err)
	}
	out := map[string]string{}
	for k, raw := range m {
		var nested map[string]json.RawMessage
		if len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, &nested) == nil {
			for nk, nv := range nested {
				out[k+"."+nk] = string(nv)
			}
			continue
		}
		out[k] = string(raw)
	}
	return out, nil
}

// updateBody is the desired config as a PUT body that also resets the
// members the current config has and the desired one leaves out (zero
// values omitted from JSON), since the API's PUT merges onto the current
// config.
func updateBody(current, desired any) (map[string]any, error) {
	var cur, want map[string]any
	for _, p := range []struct {
		v   any
		dst *map[string]any
	}{{current, &cur}, {desired, &want}} {
		b, err := json.Marshal(p.v)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, p.dst); err != nil {
			return nil, err
		}
	}
	for k, v := range cur {
		if _, ok := want[k]; ok {
			continue
		}
		switch v.(type) {
		case string:
			want[k] = ""
		case float64:
			want[k] = 0
		case bool:
			want[k] = false
		}
	}
	return want, nil
}
