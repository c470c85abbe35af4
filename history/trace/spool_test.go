package trace

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func spoolTestEvents(n int) []Event {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	evs := make([]Event, 0, n)
	for i := range n {
		switch i % 3 {
		case 0:
			evs = append(evs, StatusTrace{ID: fmt.Sprintf("s%d", i), JobName: "job<&>", TaskID: fmt.Sprintf("t%d", i), State: "TASK_RUNNING", CreationTime: t0})
		case 1:
			evs = append(evs, ExecutionStart{ID: fmt.Sprintf("e%d", i), JobName: "job", TaskID: fmt.Sprintf("t%d", i), StartTime: t0})
		default:
			evs = append(evs, ExecutionComplete{ID: fmt.Sprintf("e%d", i), JobName: "job", TaskID: fmt.Sprintf("t%d", i), Success: true,
				FailureCause: strings.Repeat("x", i), StartTime: t0, CompleteTime: t0.Add(time.Second)})
		}
	}
	return evs
}

// TestLinesAreEncodeEventsLines: the journal's shared buffer writes each
// event as encodeEvent does (HTML escaping included), a newline after
// each, and a buffer grown past maxLinesBuffer is not kept for the next
// group.
func TestLinesAreEncodeEventsLines(t *testing.T) {
	var ls lines
	for round, n := range []int{5, 1, 3} {
		ls.reset()
		evs := spoolTestEvents(n)
		var want bytes.Buffer
		var ends []int
		for _, ev := range evs {
			b, err := encodeEvent(ev)
			if err != nil {
				t.Fatal(err)
			}
			want.Write(b)
			want.WriteByte('\n')
			ends = append(ends, want.Len())
			if err := ls.add(ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := ls.add(struct{ Event }{}); err == nil {
			t.Fatal("an unknown event type was encoded")
		}
		if !bytes.Equal(ls.buf.Bytes(), want.Bytes()) || !reflect.DeepEqual(ls.ends, ends) {
			t.Fatalf("round %d: lines\n%s %v\nwant\n%s %v", round, ls.buf.Bytes(), ls.ends, want.Bytes(), ends)
		}
	}
	ls.buf.Grow(2 * maxLinesBuffer)
	ls.reset()
	if ls.buf.Cap() > maxLinesBuffer {
		t.Fatalf("kept a buffer of %d bytes", ls.buf.Cap())
	}
}

// TestSpoolAppendSplitsLinesOverSegments: lines go to segments of
// maxLines, each sealed when full, and read back whole and in order.
func TestSpoolAppendSplitsLinesOverSegments(t *testing.T) {
	dir := t.TempDir()
	sp, _, err := openSpool(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.closeCurrent(false)
	evs := spoolTestEvents(8)
	var ls lines
	ls.reset()
	for _, ev := range evs[:2] {
		if err := ls.add(ev); err != nil {
			t.Fatal(err)
		}
	}
	first, err := sp.append(ls.buf.Bytes(), ls.ends)
	if err != nil {
		t.Fatal(err)
	}
	ls.reset()
	for _, ev := range evs[2:] {
		if err := ls.add(ev); err != nil {
			t.Fatal(err)
		}
	}
	rest, err := sp.append(ls.buf.Bytes(), ls.ends)
	if err != nil {
		t.Fatal(err)
	}
	got := append(first, rest...)
	want := []placed{{seq: 1, start: 0, n: 2}, {seq: 1, start: 2, n: 1, sealed: true}, {seq: 2, start: 0, n: 3, sealed: true}, {seq: 3, start: 0, n: 2}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("placed %+v, want %+v", got, want)
	}
	var read []Event
	for seq := uint64(1); seq <= 3; seq++ {
		n := 3
		if seq == 3 {
			n = 2
		}
		es, bad, err := sp.read(seq, 0, n)
		if err != nil || len(bad) > 0 {
			t.Fatalf("segment %d: %v %v", seq, err, bad)
		}
		read = append(read, es...)
	}
	if len(read) != len(evs) {
		t.Fatalf("read %d events, want %d", len(read), len(evs))
	}
	for i := range evs {
		a, _ := encodeEvent(read[i])
		b, _ := encodeEvent(evs[i])
		if !bytes.Equal(a, b) {
			t.Fatalf("event %d read back as %s, want %s", i, a, b)
		}
	}
	if b, err := os.ReadFile(sp.path(3)); err != nil || bytes.Count(b, []byte("\n")) != 2 {
		t.Fatalf("segment 3 holds %q (%v), want 2 lines", b, err)
	}
}
