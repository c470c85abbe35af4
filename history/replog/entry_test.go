package replog

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/history/trace"
	"github.com/ejcloud/elasticjob/jobs"
)

// simEvents are the history events of n executions shaped like the
// simulated cluster's (cmd/ejbench cluster-sim): three status traces, a
// start and a completion each, task ids as the scheduler makes them.
func simEvents(n int) []trace.Event {
	var evs []trace.Event
	for i := range n {
		job := fmt.Sprintf("sim-%06d", i*7919%100_000)
		item := i % 10
		at := t0.Add(time.Duration(i) * time.Millisecond)
		agent := fmt.Sprintf("1b7c0a52-3f0e-4f6a-9d2e-5c1a7b9e%04d-S%d", i%1000, i%1000)
		tid := jobs.FireTaskID(job, item, jobs.KindReady, fmt.Sprint(i), at).String()
		host := fmt.Sprintf("sim-agent-%d", i%1000)
		for k, st := range []string{"TASK_STAGING", "TASK_RUNNING", "TASK_FINISHED"} {
			evs = append(evs, trace.StatusTrace{ID: trace.NewID(tid, st), JobName: job, OriginalTaskID: tid, TaskID: tid, SlaveID: agent,
				Source: "CLOUD_SCHEDULER", ExecutionType: "READY", ShardingItem: fmt.Sprint(item), State: "TASK_FINISHED",
				CreationTime: at.Add(time.Duration(k) * time.Second)})
		}
		id := trace.NewID(tid, "exec")
		evs = append(evs,
			trace.ExecutionStart{ID: id, JobName: job, TaskID: tid, Hostname: host, IP: "127.0.0.1", ShardingItem: item,
				ExecutionSource: "NORMAL_TRIGGER", TriggeredBy: "cron", StartTime: at},
			trace.ExecutionComplete{ID: id, JobName: job, TaskID: tid, Hostname: host, IP: "127.0.0.1", ShardingItem: item,
				ExecutionSource: "NORMAL_TRIGGER", TriggeredBy: "cron", StartTime: at, CompleteTime: at.Add(3 * time.Second), Success: true})
	}
	return evs
}

// An entry is stored compressed and read back as the same events; an
// entry of the format before (the lines as they are) is read as it is.
func TestEntryCompressedAndReadBack(t *testing.T) {
	evs := simEvents(200)
	lines, err := trace.MarshalEvents(evs)
	if err != nil {
		t.Fatal(err)
	}
	want, err := trace.UnmarshalEvents(lines)
	if err != nil {
		t.Fatal(err)
	}
	v, err := encodeEntry(lines)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(v, gzipMagic) || len(v)*4 > len(lines) {
		t.Fatalf("stored %d bytes for %d bytes of lines, want gzip at most a quarter", len(v), len(lines))
	}
	for _, stored := range [][]byte{v, lines} {
		got, err := decodeEntry(stored)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("read back %d events, not the %d written", len(got), len(want))
		}
	}
}

// A damaged entry is an error that says what failed, not events.
func TestEntryDamaged(t *testing.T) {
	lines, err := trace.MarshalEvents(simEvents(10))
	if err != nil {
		t.Fatal(err)
	}
	v, err := encodeEntry(lines)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string][]byte{
		"truncated":  v[:len(v)/2],
		"header":     append(slicesClone(gzipMagic), 0, 0, 0),
		"checksum":   append(slicesClone(v[:len(v)-8]), 0, 0, 0, 0, 0, 0, 0, 0),
		"not events": []byte("{not json\n"),
	} {
		if evs, err := decodeEntry(bad); err == nil {
			t.Fatalf("%s: %d events decoded from a damaged entry", name, len(evs))
		} else if name != "not events" && !strings.Contains(err.Error(), "replog:") {
			t.Fatalf("%s: %v, want an error that names the log", name, err)
		}
	}
}

func slicesClone(b []byte) []byte { return append([]byte(nil), b...) }

// BenchmarkEntryBytes: the stored bytes of a history batch's entry per
// event (stored-B/event; lines-B/event before compression), for batches
// of the simulated cluster's events; every member holds its last
// etcd_catchup_entries entries in memory, and the entries until pruned
// in its database.
func BenchmarkEntryBytes(b *testing.B) {
	evs := simEvents(1000) // 5,000 events: a 512 KiB entry holds ≈ 1,900
	lines, err := trace.MarshalEvents(evs)
	if err != nil {
		b.Fatal(err)
	}
	var v []byte
	b.SetBytes(int64(len(lines)))
	for b.Loop() {
		if v, err = encodeEntry(lines); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(lines))/float64(len(evs)), "lines-B/event")
	b.ReportMetric(float64(len(v))/float64(len(evs)), "stored-B/event")
}

// BenchmarkEntryDecode: reading an entry of BenchmarkEntryBytes back.
func BenchmarkEntryDecode(b *testing.B) {
	lines, err := trace.MarshalEvents(simEvents(1000))
	if err != nil {
		b.Fatal(err)
	}
	v, err := encodeEntry(lines)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(lines)))
	for b.Loop() {
		if _, err := decodeEntry(v); err != nil {
			b.Fatal(err)
		}
	}
}
