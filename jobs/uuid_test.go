package jobs

import (
	"fmt"
	"math/rand/v2"
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
