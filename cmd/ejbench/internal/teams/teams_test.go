package teams

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestFireLateness: each fire is served by the first start at or after its
// instant (a folded fire waits for the run that serves it); a fire no run
// served is +Inf; another job's starts do not count.
func TestFireLateness(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(100, 0).Add(time.Duration(ms) * time.Millisecond) }
	ev := []teamEvent{
		{at: at(5_010), ns: "search", job: "index", start: true},
		{at: at(5_020), ns: "pay", job: "index", start: true},
		{at: at(5_200), ns: "search", job: "index"},
		{at: at(15_300), ns: "search", job: "index", start: true},
	}
	got := fireLateness(ev, "search", "index", []time.Time{at(5_000), at(10_000), at(15_000), at(20_000)})
	want := []float64{0.010, 5.300, 0.300, math.Inf(1)}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-9 && !(math.IsInf(want[i], 1) && math.IsInf(got[i], 1)) {
			t.Errorf("fire %d: %v, want %v", i, got[i], want[i])
		}
	}
}

// TestCPUSeconds: runs count from start to end within the window, one
// still going up to its end, at their namespace's CPUs.
func TestCPUSeconds(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	ev := []teamEvent{
		{at: at(0), ns: "w1", job: "a", start: true}, {at: at(4), ns: "w1", job: "a"},
		{at: at(5), ns: "w2", job: "b", start: true}, {at: at(7), ns: "w2", job: "b"},
		{at: at(8), ns: "w2", job: "b", start: true},
	}
	got := cpuSeconds(ev, map[string]float64{"w1": 0.5, "w2": 1}, at(2), at(10))
	if math.Abs(got["w1"]-1) > 1e-9 || math.Abs(got["w2"]-4) > 1e-9 {
		t.Errorf("cpu seconds %v, want w1 1, w2 4", got)
	}
}

// TestReadTeamEvents: the lines the script writes, sorted by time;
// malformed lines are skipped.
func TestReadTeamEvents(t *testing.T) {
	p := filepath.Join(t.TempDir(), "events")
	if err := os.WriteFile(p, []byte("2000000000 pay burst-01 end\n1000000000 pay burst-01 start\nnot a line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ev := readTeamEvents(p)
	if len(ev) != 2 || !ev[0].start || ev[0].job != "burst-01" || ev[1].start || !ev[1].at.Equal(time.Unix(2, 0)) {
		t.Errorf("events %+v", ev)
	}
}

// TestParseSimBench: the simulation's reported metrics by scenario.
func TestParseSimBench(t *testing.T) {
	out := "BenchmarkRealRun/two-team-2   1  15370556 ns/op  7.000 fires  0 late-max-ms  36.30 pay-done-s\nPASS\n"
	m := parseSimBench(out)["two-team"]
	if m["fires"] != 7 || m["pay-done-s"] != 36.3 || m["late-max-ms"] != 0 {
		t.Errorf("parsed %v", m)
	}
}
