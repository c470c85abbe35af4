// Package nsusage keeps, on the leader, each namespace's usage over the
// last hour and the on-time rate of its cron fires: what the console's
// namespace page draws (GET /api/namespaces/{name}/usage, docs/tenancy.md).
// The series is in memory: it starts empty at each leader's term.
package nsusage

import (
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/namespace"
)

const (
	// Every is how often the leader samples each namespace's usage.
	Every = 10 * time.Second
	// Keep is how many samples a namespace keeps: an hour of them.
	Keep = 360
	// OnTimeBound is how late a cron fire may be admitted and still count
	// as on time (the tenancy goal: a fire within its namespace's
	// guarantee starts within 1 s of its instant).
	OnTimeBound = time.Second
	// KeepLate is how many late runs a namespace keeps (the latest).
	KeepLate = 20
)

// LateRun is a run of the namespace launched more than OnTimeBound after
// it was due, with why (observe.TaskEvent.Late).
type LateRun struct {
	Job    string    `json:"jobName"` // the name in its namespace
	TaskID string    `json:"taskId"`
	Due    time.Time `json:"due"`
	At     time.Time `json:"launchedAt"`
	Why    string    `json:"why"`
}

// Sample is a namespace's usage at one instant, and the cron fires
// admitted since the sample before.
type Sample struct {
	At       time.Time `json:"at"`
	CPUCount float64   `json:"cpuCount"`
	MemoryMB float64   `json:"memoryMB"`
	Fires    int       `json:"fires"`
	OnTime   int       `json:"onTime"`
}

// Snapshot is what the series holds of one namespace.
type Snapshot struct {
	Since   time.Time `json:"since"` // when this leader began keeping it (zero: no leader here)
	Samples []Sample  `json:"samples"`
	// Fires and OnTime count the cron fires admitted over the samples'
	// hour (and since the last sample).
	Fires  int `json:"fires"`
	OnTime int `json:"onTime"`
	// Late are its latest late runs this term, newest first (at most
	// KeepLate, of the last hour).
	Late []LateRun `json:"late"`
}

// Rate is the share of fires on time; false when none was admitted.
func (s Snapshot) Rate() (float64, bool) {
	if s.Fires == 0 {
		return 0, false
	}
	return float64(s.OnTime) / float64(s.Fires), true
}

// Series is every namespace's samples. Safe for concurrent use; the
// zero value is not: use New.
type Series struct {
	mu    sync.Mutex
	since time.Time
	ns    map[string]*ring
}

type ring struct {
	samples      []Sample  // oldest first, at most Keep
	fires, onTim int       // admitted since the last sample
	late         []LateRun // oldest first, at most KeepLate
}

// New returns an empty series.
func New() *Series { return &Series{ns: map[string]*ring{}} }

// Reset forgets every sample: a new term begins keeping them at now.
func (s *Series) Reset(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.since, s.ns = now, map[string]*ring{}
}

func (s *Series) ring(ns string) *ring {
	r := s.ns[ns]
	if r == nil {
		r = &ring{}
		s.ns[ns] = r
	}
	return r
}

// Fired counts a cron fire of namespace ns admitted late by lateness.
func (s *Series) Fired(ns string, lateness time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.ring(ns)
	r.fires++
	if lateness <= OnTimeBound {
		r.onTim++
	}
}

// Late keeps a late run of namespace ns.
func (s *Series) Late(ns string, run LateRun) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.ring(ns)
	if len(r.late) == KeepLate {
		r.late = append(r.late[:0], r.late[1:]...)
	}
	r.late = append(r.late, run)
}

// Record appends the usages sampled at now (every namespace that exists;
// the ones absent are dropped: deleted).
func (s *Series) Record(now time.Time, usage map[string]namespace.Resources) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ns := range s.ns {
		if _, ok := usage[ns]; !ok {
			delete(s.ns, ns)
		}
	}
	for ns, u := range usage {
		r := s.ring(ns)
		if len(r.samples) == Keep {
			r.samples = append(r.samples[:0], r.samples[1:]...)
		}
		r.samples = append(r.samples, Sample{At: now, CPUCount: u.CPUCount, MemoryMB: u.MemoryMB, Fires: r.fires, OnTime: r.onTim})
		r.fires, r.onTim = 0, 0
	}
}

// Snapshot copies namespace ns's samples and sums its fires.
func (s *Series) Snapshot(ns string) Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Snapshot{Since: s.since, Samples: []Sample{}}
	r := s.ns[ns]
	if r == nil {
		return out
	}
	out.Samples = append(out.Samples, r.samples...)
	out.Fires, out.OnTime = r.fires, r.onTim
	for i := len(r.late) - 1; i >= 0; i-- {
		if len(r.samples) > 0 && r.late[i].At.Before(r.samples[0].At) {
			break // older than the samples' hour
		}
		out.Late = append(out.Late, r.late[i])
	}
	for _, x := range r.samples {
		out.Fires += x.Fires
		out.OnTime += x.OnTime
	}
	return out
}
