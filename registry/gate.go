package registry

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/store"
)

// A job's gate is its change node (ChangedJobPath/{job}): every change
// that clears the job's pending executions writes it in its own commit —
// register, update and enable with the change's instant, disable marked
// off (gateOff) — and a cron fire that names its instant (CronFire.Instant)
// commits only with a Check of the gate's version as it read it. So, by
// construction on every store:
//
//   - no fire lands after a disable's commit while the job is off (the
//     disable's commit changed the gate: the fire's Check fails, and read
//     again the gate says off);
//   - no fire lands after an update, an enable or a new registration for
//     an instant before it (the change would have cleared it, had the
//     fire committed at its instant): it is void.
//
// A fire that landed before the change is cleared by the change's own
// commit (SetDisabled, UpdateJobAt, DeleteJob): were the clearing the
// leader's, after it saw the change, a fault on its link to the registry
// could let a fire of the disabled job run after the enable.
//
// The value is an RFC 3339 instant (JobsChangedAt reads it), gateOff and
// one (the job is disabled, or deregistered and seen so by PruneGates),
// gateOff alone (deregistered), or empty (no instant recorded: created by
// a fire for a job registered before gates were written).
//
// A deregistered job's gate is kept, off, rather than deleted: a store
// that numbers a node's versions from 0 again when it is made anew
// (ZooKeeper, SQLite, memory) would let a fire that read the old job's
// gate at version 0 pass its check on the gate of a job registered again
// under the name. PruneGates forgets it once no fire can be in flight.
const gateOff = "off "

// GateLifetime is how long a deregistered job's gate is kept after the
// leader first saw it (PruneGates): far longer than a fire's commit can
// take.
const GateLifetime = 60 * time.Minute

func gatePath(job string) string { return ChangedJobPath + "/" + job }

// gateOffValue is a disabled job's gate.
func gateOffValue(now time.Time) []byte {
	return []byte(gateOff + now.UTC().Format(time.RFC3339Nano))
}

// gateAt is a gate recording a change at now (empty when now is zero).
func gateAt(now time.Time) []byte {
	if now.IsZero() {
		return []byte{}
	}
	return []byte(now.UTC().Format(time.RFC3339Nano))
}

// gate reads job's gate (in kv, the registry's view) for a fire of instant: whether the fire may
// commit, and the ops that make its commit conditional on what was read.
// A zero instant is an ungated fire (TriggerMany's callers: benchmarks,
// tests). A job without a gate gets one in the fire's commit (a disable
// meanwhile makes the create fail), if the job is still registered.
func gate(ctx context.Context, kv store.KV, job string, instant time.Time) (ops []store.Op, open bool, err error) {
	if instant.IsZero() {
		return nil, true, nil
	}
	n, err := kv.Get(ctx, gatePath(job))
	if errors.Is(err, store.ErrNotFound) {
		if _, err := kv.Get(ctx, jobPath(job)); errors.Is(err, store.ErrNotFound) {
			return nil, false, nil // deregistered
		} else if err != nil {
			return nil, false, err
		}
		return []store.Op{store.Check(jobPath(job), store.AnyVersion), store.Create(gatePath(job), []byte{})}, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	if !gateOpen(n.Value, instant) {
		return nil, false, nil
	}
	return []store.Op{store.Check(gatePath(job), n.Version)}, true, nil
}

// sameConfig adds to a fire's gate ops a Check of job's stored
// configuration, when it is still the one whose fingerprint is sum (the
// one the producer computed the fire's instant from); open is false when
// it is another or gone: the fire is void. The gate alone voids a fire of
// an instant before the job's last change, not one after it computed from
// the configuration the change replaced (a cron update the producer
// applies only after the old cron's next instant, which fires).
func sameConfig(ctx context.Context, kv store.KV, job string, sum uint64, ops []store.Op) ([]store.Op, bool, error) {
	n, err := kv.Get(ctx, jobPath(job))
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if stored(nil, n).Sum() != sum {
		return nil, false, nil
	}
	return append(ops, store.Check(jobPath(job), n.Version)), true, nil
}

// gateClosed reads whether job is disabled or deregistered by its gate (in
// kv, the registry's view), with a Check of the gate as read, for a commit
// that must not cross a disable or an enable (Requeue). A job with no gate
// is open, unchecked: gates are written by every change that clears a
// job's pending executions.
func gateClosed(ctx context.Context, kv store.KV, job string) (off bool, ops []store.Op, err error) {
	n, err := kv.Get(ctx, gatePath(job))
	if errors.Is(err, store.ErrNotFound) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	return strings.HasPrefix(string(n.Value), gateOff), []store.Op{store.Check(gatePath(job), n.Version)}, nil
}

// gateOpen: a gate's value lets a fire of instant commit.
func gateOpen(v []byte, instant time.Time) bool {
	s := string(v)
	if strings.HasPrefix(s, gateOff) {
		return false
	}
	at, err := time.Parse(time.RFC3339Nano, s)
	return err != nil || !at.After(instant)
}

// JobChangedAt is the instant job's gate records: its registration, its
// last update or enable made at a known instant (zero: none recorded, the
// job is off, or it is unknown). A leader whose loop applies such a
// change late schedules the job from it (scheduler's configFollower): the
// fires from the change's commit on are the job's, however late the
// leader saw it.
func (cf Config) JobChangedAt(ctx context.Context, job string) (time.Time, error) {
	n, err := cf.r.kv.Get(ctx, gatePath(job))
	if errors.Is(err, store.ErrNotFound) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	s := string(n.Value)
	if s == "" || strings.HasPrefix(s, gateOff) {
		return time.Time{}, nil
	}
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, decodeErr(n.Path, err)
	}
	return at, nil
}

// PruneGates forgets the gates of deregistered jobs (gate.go), and their
// ready generations (ready_gen.go): a gate
// whose job is gone is stamped with now when first seen, and deleted
// once stamped before cutoff, each conditional on the version read (a
// registration meanwhile writes the gate and wins).
func (cf Config) PruneGates(ctx context.Context, now, cutoff time.Time) error {
	nodes, err := cf.r.kv.List(ctx, ChangedJobPath)
	if err != nil {
		return err
	}
	var ops []store.Op
	for _, n := range nodes {
		v := string(n.Value)
		if !strings.HasPrefix(v, gateOff) {
			continue
		}
		if _, err := cf.r.kv.Get(ctx, jobPath(lastSegment(n.Path))); err == nil {
			continue // disabled, not gone
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		p := gatePath(lastSegment(n.Path))
		if v == gateOff {
			ops = append(ops, store.Set(p, gateOffValue(now), n.Version))
		} else if at, err := time.Parse(time.RFC3339Nano, v[len(gateOff):]); err != nil || at.Before(cutoff) {
			// The job's ready generation (ready_gen.go) is kept as long, for
			// the same reason, and goes with it.
			ops = append(ops, store.Delete(p, n.Version), store.Delete(readyGenOf(lastSegment(n.Path)), store.AnyVersion))
		}
	}
	if len(ops) == 0 {
		return nil
	}
	err = cf.r.commit(ctx, ops...)
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
		return nil // a registration meanwhile: the next pass
	}
	return err
}
