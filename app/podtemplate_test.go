package app

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestPodTemplateJSON: an object is kept (compacted), null and {} are no template (absent
// from the JSON), anything else is refused; Validate bounds the size.
func TestPodTemplateJSON(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{`{"podTemplate": {"spec": {"serviceAccountName": "x"}}}`, `"podTemplate":{"spec":{"serviceAccountName":"x"}}`, ""},
		{`{"podTemplate": null}`, "", ""},
		{`{"podTemplate": {}}`, "", ""},
		{`{"podTemplate": [1]}`, "", "podTemplate must be an object"},
		{`{"podTemplate": "x"}`, "", "podTemplate must be an object"},
	} {
		var c Config
		err := json.Unmarshal([]byte(tc.in), &c)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		out, _ := json.Marshal(c)
		if got := string(out); (tc.want == "" && strings.Contains(got, "podTemplate")) || !strings.Contains(got, tc.want) {
			t.Errorf("%s: encoded %s, want %s", tc.in, got, tc.want)
		}
	}
	big := PodTemplate(`{"metadata":{"annotations":{"a":"` + strings.Repeat("x", MaxPodTemplateBytes) + `"}}}`)
	if err := big.Validate(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "at most") {
		t.Errorf("a large template: %v", err)
	}
}
