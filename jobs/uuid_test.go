package jobs

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// FormatUUID writes what fmt's hex verbs wrote before it, for any bytes.
func TestFormatUUIDIsFmts(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	cases := [][16]byte{{}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	for range 10_000 {
		var b [16]byte
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		cases = append(cases, b)
	}
	for _, b := range cases {
		want := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
		if got := FormatUUID(b); got != want {
			t.Fatalf("FormatUUID(%x) = %s, want %s", b, got, want)
		}
	}
	at := time.Date(2026, 11, 25, 4, 20, 0, 123e6, time.UTC)
	u := UUIDAt(at, make([]byte, 16), 7)
	if got, ok := UUIDTime(u); !ok || !got.Equal(at) {
		t.Fatalf("UUIDTime(UUIDAt(%s)) = %s, %v (%s)", at, got, ok, u)
	}
}

func BenchmarkUUIDAt(b *testing.B) {
	rest := make([]byte, 16)
	at := time.Now()
	for b.Loop() {
		_ = UUIDAt(at, rest, 8)
	}
}

// ParseTaskID splits exactly as strings.Split did: the same parts, and
// an error for any count but five.
func TestParseTaskIDSplitsAsSplit(t *testing.T) {
	for _, s := range []string{
		"", "a", "a@-@0@-@READY@-@s1@-@u", "a@-@0@-@READY@-@s1", "a@-@0@-@READY@-@s1@-@u@-@v",
		"@-@0@-@READY@-@@-@", "a@-@-@0@-@READY@-@s1@-@u", "a@-@0@-@READY@-@s1@-@u@-@", "@-@@-@@-@@-@",
		"a@-@01@-@READY@-@s1@-@u", "a@-@0@-@FAILOVER@-@s@-@1@-@u", "job@-@12@-@FAILOVER@-@agent-S3@-@01a210cd-f07e-790f",
	} {
		got, err := ParseTaskID(s)
		parts := strings.Split(s, Separator)
		if len(parts) != 5 {
			if err == nil {
				t.Errorf("ParseTaskID(%q) = %+v; want an error (%d parts)", s, got, len(parts))
			}
			continue
		}
		if item, ok := parseItem(parts[1]); !ok || (parts[2] != string(KindReady) && parts[2] != string(KindFailover)) {
			if err == nil {
				t.Errorf("ParseTaskID(%q) = %+v; want an error", s, got)
			}
			continue
		} else if err != nil || got != (TaskID{JobName: parts[0], Item: item, Kind: TaskKind(parts[2]), AgentID: parts[3], UUID: parts[4]}) {
			t.Errorf("ParseTaskID(%q) = %+v, %v; want the parts %q", s, got, err, parts)
		}
	}
}

func BenchmarkParseTaskID(b *testing.B) {
	id := "sim-092489@-@3@-@READY@-@cdac4c83-ea31-4da5-bb43-945e093d0e4e-S56@-@01a210cd-f07e-7509-95e8-57b4897ac04e"
	for b.Loop() {
		if _, err := ParseTaskID(id); err != nil {
			b.Fatal(err)
		}
	}
}

// TestParseTaskIDRefusesPaths: a task id names a directory in a sandbox
// (tasks/<id>), read by the agent: one that could climb out of it is not
// a task id.
func TestParseTaskIDRefusesPaths(t *testing.T) {
	for _, s := range []string{
		"a@-@0@-@READY@-@s1@-@../../../e2/runs/x", "a@-@0@-@READY@-@s1/..@-@u", "a/b@-@0@-@READY@-@s1@-@u",
		"a@-@0@-@READY@-@s1@-@u\x00",
	} {
		if got, err := ParseTaskID(s); err == nil {
			t.Errorf("ParseTaskID(%q) = %+v; want an error", s, got)
		}
	}
}
