package backfill

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ejcloud/elasticjob/registry"
)

// States of a backfill.
const (
	Running   = "RUNNING"
	Paused    = "PAUSED"
	Cancelled = "CANCELLED"
	Done      = "DONE"
)

// MaxInstants bounds one backfill's instants (a month of a job firing
// every minute is 44,640).
const MaxInstants = 50_000

// ConfirmAbove is the most runs a backfill starts without its caller
// confirming the count (maxRuns): a mistyped year (a range from 1900)
// should not queue tens of thousands of runs at once.
const ConfirmAbove = 1000

// Confirmed checks a range of n runs against the caller's maxRuns (0:
// none given): above ConfirmAbove runs, maxRuns must cover n.
func Confirmed(n, maxRuns int) error {
	switch {
	case maxRuns < 0:
		return fmt.Errorf("%w: maxRuns %d must not be negative", ErrInvalid, maxRuns)
	case maxRuns > 0 && n > maxRuns:
		return fmt.Errorf("%w: the range holds %d runs, more than maxRuns %d; narrow the range or raise maxRuns", ErrInvalid, n, maxRuns)
	case maxRuns == 0 && n > ConfirmAbove:
		return fmt.Errorf("%w: the range holds %d runs (more than %d): check the range, then confirm with maxRuns %d (ejctl: --max-runs %d)", ErrInvalid, n, ConfirmAbove, n, n)
	}
	return nil
}

// MaxConcurrency bounds a backfill's runs in flight.
const MaxConcurrency = 64

// ErrInvalid marks a backfill request that cannot be honoured.
var ErrInvalid = errors.New("backfill: invalid")

// Backfill is one backfill's record.
type Backfill struct {
	ID string `json:"id"`
	// Source is the job or workflow it runs the instants of (stored in
	// the record's namespace, jobName or workflowName, and key: record).
	Source      Source    `json:"-"`
	From        time.Time `json:"from"` // inclusive
	To          time.Time `json:"to"`   // exclusive
	Concurrency int       `json:"concurrency"`
	State       string    `json:"state"`
	// Total is the count of instants; Next the index of the first not yet
	// queued.
	Total int `json:"total"`
	Next  int `json:"next"`
	// InFlight are the runs queued and not yet ended.
	InFlight []Flight `json:"inFlight,omitempty"`
	// Succeeded and Failed count the runs that ended; Skipped the
	// instants another backfill had queued already.
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Skipped   int `json:"skipped"`
	// FailedAt are the instants whose runs failed or were lost (Unix
	// seconds, in the order they ended): the API lists them, and a later
	// backfill of the same job may queue them again (Redo), where a
	// succeeded instant stays done.
	FailedAt  []int64   `json:"failedAt,omitempty"`
	CreatedBy string    `json:"createdBy,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	EndedAt   time.Time `json:"endedAt,omitzero"`
	Version   int64     `json:"-"`
}

// Flight is one run of a backfill in flight.
type Flight struct {
	At  time.Time `json:"at"`  // its nominal instant
	Key string    `json:"key"` // its idempotency key (a workflow's: its run's id)
	// Unseen counts the passes that found it neither queued, running
	// nor ended (two in a row: lost, counted as failed).
	Unseen int `json:"unseen,omitempty"`
}

// Progress is a backfill's counts as the API shows them.
type Progress struct {
	Done      int `json:"done"` // ended: succeeded or failed
	Running   int `json:"running"`
	Remaining int `json:"remaining"` // not yet queued (none once cancelled)
	Failed    int `json:"failed"`
	Skipped   int `json:"skipped"`
	Total     int `json:"total"`
}

// Progress counts b's runs.
func (b Backfill) Progress() Progress {
	p := Progress{Done: b.Succeeded + b.Failed, Running: len(b.InFlight), Failed: b.Failed, Skipped: b.Skipped, Total: b.Total}
	if b.State != Cancelled {
		p.Remaining = b.Total - b.Next
	}
	return p
}

// Final reports whether b will queue nothing more and has nothing in flight.
func (b Backfill) Final() bool {
	return b.State == Done || b.State == Cancelled && len(b.InFlight) == 0
}

// FailedInstants are b's instants whose runs failed or were lost.
func (b Backfill) FailedInstants() []time.Time { return DecodeInstants(b.FailedAt) }

// HasFailed reports whether b's run at instant at failed or was lost.
func (b Backfill) HasFailed(at time.Time) bool { return slices.Contains(b.FailedAt, at.Unix()) }

// IsWorkflow reports whether b backfills a workflow.
func (b Backfill) IsWorkflow() bool { return b.Source.IsWorkflow() }

// JobName is the name of b's job as its namespace knows it ("": b
// backfills a workflow); WorkflowName likewise.
func (b Backfill) JobName() string {
	if b.Source.IsWorkflow() {
		return ""
	}
	return b.Source.Name
}

// WorkflowName is the name of b's workflow ("": b backfills a job).
func (b Backfill) WorkflowName() string {
	if b.Source.IsWorkflow() {
		return b.Source.Name
	}
	return ""
}

// Key is b's source's scheduler-wide name.
func (b Backfill) Key() string { return b.Source.Key() }

// RunKey is the idempotency key of b's run at instant at, as the
// scheduler's view of the registry names it (qualified with b's namespace).
func (b Backfill) RunKey(at time.Time) string {
	return registry.BackfillRunKey(b.Source.Namespace, b.ID, at)
}

// NewID names a backfill made at now for a job (seq disambiguates ids made
// in one second).
func NewID(now time.Time, seq uint32) string {
	return fmt.Sprintf("bf-%s-%04x", now.UTC().Format("20060102T150405"), seq&0xffff)
}

// Instants are the instants a job's plan has in [from, to): its fires
// (between returns them in (a, b]), each as its nominal instant (the
// fire less the plan's jitter offset). A range holding more than
// MaxInstants is an error.
func Instants(between func(a, b time.Time, limit int) ([]time.Time, bool), offset time.Duration, from, to time.Time) ([]time.Time, error) {
	fires, more := between(from.Add(-time.Second+offset), to.Add(-time.Second+offset), MaxInstants)
	if more {
		return nil, fmt.Errorf("%w: the range holds more than %d instants; split it", ErrInvalid, MaxInstants)
	}
	out := make([]time.Time, len(fires))
	for i, f := range fires {
		out[i] = f.Add(-offset).UTC()
	}
	return out, nil
}

// Check validates a new backfill's range and bound against now.
func Check(from, to time.Time, concurrency int, now time.Time) error {
	switch {
	case from.IsZero() || to.IsZero():
		return fmt.Errorf("%w: from and to are required (RFC 3339)", ErrInvalid)
	case !to.After(from):
		return fmt.Errorf("%w: to (%s) must be after from (%s)", ErrInvalid, to.Format(time.RFC3339), from.Format(time.RFC3339))
	case to.After(now):
		return fmt.Errorf("%w: to (%s) is in the future; a backfill covers a past range (live fires cover the rest)", ErrInvalid, to.Format(time.RFC3339))
	case concurrency < 0 || concurrency > MaxConcurrency:
		return fmt.Errorf("%w: concurrency %d must be in [1, %d] (0: 1)", ErrInvalid, concurrency, MaxConcurrency)
	}
	return nil
}

// EncodeInstants and DecodeInstants are the instants' stored form: Unix
// seconds.
func EncodeInstants(ts []time.Time) []int64 {
	out := make([]int64, len(ts))
	for i, t := range ts {
		out[i] = t.Unix()
	}
	return out
}

// DecodeInstants is EncodeInstants' inverse.
func DecodeInstants(us []int64) []time.Time {
	out := make([]time.Time, len(us))
	for i, u := range us {
		out[i] = time.Unix(u, 0).UTC()
	}
	return out
}
