package mesos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// event is what the subscription stream is decoded into. It embeds the mesos-go Event (so it
// satisfies encoding.Unmarshaler and works with the stock JSON codec) and overrides
// UnmarshalJSON to tolerate what a newer master sends.
//
// The ffjson decoders generated for mesos-go v0.0.11 skip unknown fields and accept `{}` in
// repeated messages, but fail on enum names they do not know (a capability, task state, reason or
// event type added after v0.0.11). On such an error the frame is re-parsed generically, each
// unknown enum value named by the error is removed, and decoding is retried. The raw state,
// reason and source strings of an UPDATE are kept so that a status with a state unknown to the
// protos still reaches the handler under its real name.
type event struct {
	scheduler.Event
	rawState, rawReason, rawSource string
}

var unknownEnum = regexp.MustCompile(`unrecognized enum \S+ value "([^"]*)"`)

// maxEnumRepairs bounds the decode-repair loop for one frame.
const maxEnumRepairs = 16

// UnmarshalJSON decodes one event frame; see the type documentation.
func (e *event) UnmarshalJSON(b []byte) error {
	*e = event{}
	// The generated decoder, directly: the codec (mesosframe.Unmarshal)
	// has checked the frame is valid JSON, and so does the generated lexer.
	err := e.Event.UnmarshalJSON(b)
	if err == nil {
		return nil
	}
	m := unknownEnum.FindStringSubmatch(err.Error())
	if m == nil {
		return fmt.Errorf("decode event: %w", err)
	}
	tree, perr := parseTree(b)
	if perr != nil {
		return fmt.Errorf("decode event: %w", err)
	}
	e.rawState, e.rawReason, e.rawSource = rawStatus(tree)
	for range maxEnumRepairs {
		tree = stripString(tree, m[1])
		clean, merr := json.Marshal(tree)
		if merr != nil {
			return fmt.Errorf("decode event: %w", merr)
		}
		e.Event = scheduler.Event{}
		if err = json.Unmarshal(clean, &e.Event); err == nil {
			return nil
		}
		if m = unknownEnum.FindStringSubmatch(err.Error()); m == nil {
			break
		}
	}
	return fmt.Errorf("decode event: %w", err)
}

func parseTree(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber() // keep large integers (packed IPs, nanoseconds) exact
	var v any
	err := d.Decode(&v)
	return v, err
}

// rawStatus returns update.status.{state,reason,source} as written on the wire.
func rawStatus(tree any) (state, reason, source string) {
	top, _ := tree.(map[string]any)
	upd, _ := top["update"].(map[string]any)
	st, _ := upd["status"].(map[string]any)
	state, _ = st["state"].(string)
	reason, _ = st["reason"].(string)
	source, _ = st["source"].(string)
	return state, reason, source
}

// stripString removes every object member and array element whose value is the string s.
// An array of enum values loses the element; a message with an enum member loses the member
// (so `{"type":"NEW_CAPABILITY"}` becomes `{}`, which decodes as UNKNOWN).
func stripString(v any, s string) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if str, ok := x.(string); ok && str == s {
				delete(t, k)
				continue
			}
			t[k] = stripString(x, s)
		}
		return t
	case []any:
		out := t[:0]
		for _, x := range t {
			if str, ok := x.(string); ok && str == s {
				continue
			}
			out = append(out, stripString(x, s))
		}
		return out
	default:
		return v
	}
}
