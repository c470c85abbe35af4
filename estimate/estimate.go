package estimate

import (
	"encoding/json"
	"slices"
	"time"
)

// MinRuns is how many recent runs a percentile needs: fewer say too
// little about a job (Typical.Known is false).
const MinRuns = 3

// MaxRuns bounds the runs a Typical is made of: the most recent ones
// (older runs describe the job less well; a job changes).
const MaxRuns = 50

// Typical is what a job's recent runs took. Its JSON gives the
// durations in milliseconds (medianMs, p90Ms, maxMs, latestMs).
type Typical struct {
	Runs   int           // how many durations it was made of
	Median time.Duration // 50th percentile
	P90    time.Duration // 90th percentile
	Max    time.Duration // the longest
	Known  bool          // Runs ≥ MinRuns
	Latest time.Duration // the most recent run's
}

// MarshalJSON writes the durations in milliseconds.
func (t Typical) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Runs     int   `json:"runs"`
		MedianMs int64 `json:"medianMs"`
		P90Ms    int64 `json:"p90Ms"`
		MaxMs    int64 `json:"maxMs"`
		Known    bool  `json:"known"`
		LatestMs int64 `json:"latestMs,omitempty"`
	}{t.Runs, t.Median.Milliseconds(), t.P90.Milliseconds(), t.Max.Milliseconds(), t.Known, t.Latest.Milliseconds()})
}

// Of sums up durations, most recent first (at most MaxRuns of them are
// used; negative ones, from clocks that disagree, count as zero).
func Of(recent []time.Duration) Typical {
	if len(recent) > MaxRuns {
		recent = recent[:MaxRuns]
	}
	t := Typical{Runs: len(recent), Known: len(recent) >= MinRuns}
	if len(recent) == 0 {
		return t
	}
	sorted := make([]time.Duration, len(recent))
	for i, d := range recent {
		sorted[i] = max(d, 0)
	}
	t.Latest = sorted[0]
	slices.Sort(sorted)
	t.Median, t.P90, t.Max = Quantile(sorted, 0.5), Quantile(sorted, 0.9), sorted[len(sorted)-1]
	return t
}

// Quantile is the q-quantile (0 < q ≤ 1) of sorted durations by the
// nearest-rank method: the smallest value at least q of them do not
// exceed (zero for none).
func Quantile(sorted []time.Duration, q float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(q*float64(n) + 0.999999999) // ceil, robust to 0.9*10 = 9.000000000000002
	return sorted[min(max(rank, 1), n)-1]
}

// P90 is the 90th percentile of durations in any order.
func P90(ds []time.Duration) time.Duration {
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	return Quantile(sorted, 0.9)
}

// Basis says what an expected end is based on.
type Basis string

const (
	BasisNone    Basis = ""        // nothing known: no expected end
	BasisP90     Basis = "p90"     // the job's recent runs
	BasisTimeout Basis = "timeout" // the job's timeoutSeconds (too few runs)
)

// End is when a run started at started is expected to end: at its P90
// when the job's runs are known, else at its timeout (0: none), whichever
// comes first when both are known (a run never outlives its timeout).
func End(started time.Time, typical Typical, timeout time.Duration) (time.Time, Basis) {
	switch {
	case typical.Known && (timeout <= 0 || typical.P90 <= timeout):
		return started.Add(typical.P90), BasisP90
	case timeout > 0:
		return started.Add(timeout), BasisTimeout
	}
	return time.Time{}, BasisNone
}
