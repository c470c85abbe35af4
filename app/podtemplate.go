package app

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// PodTemplate is an app's or a job's podTemplate: a Kubernetes PodTemplateSpec kept as the
// JSON it was given (the kube package reads and merges it; apps and jobs stay free of
// Kubernetes types). JSON null and {} are no template.
type PodTemplate json.RawMessage

// MaxPodTemplateBytes bounds a podTemplate's JSON.
const MaxPodTemplateBytes = 64 << 10

// MarshalJSON writes the template as it was given (null when there is none).
func (t PodTemplate) MarshalJSON() ([]byte, error) {
	if t.Empty() {
		return []byte("null"), nil
	}
	return []byte(t), nil
}

// UnmarshalJSON keeps an object compacted, turns null into no template and refuses
// anything else.
func (t *PodTemplate) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*t = nil
		return nil
	}
	if len(b) == 0 || b[0] != '{' {
		return fmt.Errorf("podTemplate must be an object (a Kubernetes PodTemplateSpec with metadata and spec)")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return fmt.Errorf("podTemplate: %w", err)
	}
	if buf.Len() == 2 { // {}
		*t = nil
		return nil
	}
	*t = PodTemplate(buf.Bytes())
	return nil
}

// Empty reports whether there is no template.
func (t PodTemplate) Empty() bool { return len(t) == 0 || string(t) == "null" || string(t) == "{}" }

// Validate checks what does not need Kubernetes: a JSON object of bounded size.
func (t PodTemplate) Validate() error {
	if t.Empty() {
		return nil
	}
	if len(t) > MaxPodTemplateBytes {
		return fmt.Errorf("%w: podTemplate must be at most %d bytes of JSON, got %d", ErrInvalid, MaxPodTemplateBytes, len(t))
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(t, &m); err != nil {
		return fmt.Errorf("%w: podTemplate must be an object (a Kubernetes PodTemplateSpec with metadata and spec): %v", ErrInvalid, err)
	}
	return nil
}
