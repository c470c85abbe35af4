package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ejcloud/elasticjob/clock"
)

// Maintenance keeps the store small on its own: defragmentation of the
// members whose backend is mostly free space, one member at a time,
// disarming a NOSPACE alarm once the space is back; and, for an external
// cluster that does not compact itself, compaction of the history older
// than one interval. Embedded members compact themselves
// (MemberConfig.AutoCompactionMode: periodic, DefaultCompactionRetention).
type Maintenance struct {
	Admin    *Admin
	Interval time.Duration // between passes (1 h)
	// MinFree and FreeRatio: a member is defragmented when its free
	// space is at least MinFree bytes (64 MiB) and FreeRatio (0.5) of its
	// backend; a member with a NOSPACE alarm always is.
	MinFree   int64
	FreeRatio float64
	// Timeout bounds one member's defragmentation (it blocks that
	// member's reads and writes meanwhile) (1 min).
	Timeout time.Duration
	// Compact: compact to the revision the previous pass saw (for an
	// external cluster without --auto-compaction-retention).
	Compact bool
	Clock   clock.Clock
	Log     *slog.Logger

	lastRev int64
}

func (m *Maintenance) defaults() {
	if m.Interval <= 0 {
		m.Interval = time.Hour
	}
	if m.MinFree <= 0 {
		m.MinFree = 64 << 20
	}
	if m.FreeRatio <= 0 {
		m.FreeRatio = 0.5
	}
	if m.Timeout <= 0 {
		m.Timeout = time.Minute
	}
	if m.Clock == nil {
		m.Clock = clock.Real{}
	}
	if m.Log == nil {
		m.Log = slog.New(slog.DiscardHandler)
	}
}

// PassResult is what one pass did.
type PassResult struct {
	Defragmented []string `json:"defragmented"`
	FreedBytes   int64    `json:"freedBytes"`
	Disarmed     bool     `json:"disarmed,omitempty"`
	CompactedTo  int64    `json:"compactedTo,omitempty"`
}

// Pass runs one maintenance pass.
func (m *Maintenance) Pass(ctx context.Context) (PassResult, error) {
	m.defaults()
	var res PassResult
	cli := m.Admin.s.cli
	if m.Compact {
		resp, err := cli.Get(ctx, m.Admin.s.k.guard, clientv3.WithCountOnly())
		if err != nil {
			return res, fmt.Errorf("etcd maintenance: %w", err)
		}
		if m.lastRev > 0 {
			if _, err := cli.Compact(ctx, m.lastRev, clientv3.WithCompactPhysical()); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
				return res, fmt.Errorf("etcd maintenance: compact to %d: %w", m.lastRev, err)
			}
			res.CompactedTo = m.lastRev
		}
		m.lastRev = resp.Header.Revision
	}
	sts, err := m.Admin.Statuses(ctx)
	if err != nil {
		return res, err
	}
	alarmed := false
	for _, st := range sts {
		if !st.Healthy || len(st.ClientURLs) == 0 {
			continue
		}
		nospace := false
		for _, al := range st.Alarms {
			if al == pb.AlarmType_NOSPACE.String() {
				nospace, alarmed = true, true
			}
		}
		free := st.DBSize - st.DBInUse
		if !nospace && (free < m.MinFree || float64(free) < m.FreeRatio*float64(st.DBSize)) {
			continue
		}
		dctx, cancel := context.WithTimeout(ctx, m.Timeout)
		_, err := m.Admin.s.urlClient().Defragment(dctx, st.ClientURLs[0])
		cancel()
		if err != nil {
			return res, fmt.Errorf("etcd maintenance: defragment %s: %w", st.Name, err)
		}
		m.Log.Info("etcd maintenance: defragmented", "member", st.Name, "freed_bytes", free)
		res.Defragmented = append(res.Defragmented, st.Name)
		res.FreedBytes += free
	}
	if alarmed {
		al, err := cli.AlarmList(ctx)
		if err != nil {
			return res, fmt.Errorf("etcd maintenance: alarms: %w", err)
		}
		for _, a := range al.Alarms { // each member's own (a member id of 0 disarms nothing)
			if a.Alarm != pb.AlarmType_NOSPACE {
				continue
			}
			if _, err := cli.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: a.MemberID, Alarm: a.Alarm}); err != nil {
				return res, fmt.Errorf("etcd maintenance: disarm NOSPACE: %w", err)
			}
		}
		res.Disarmed = true
		m.Log.Warn("etcd maintenance: NOSPACE alarm disarmed after defragmentation; raise the quota if it comes back")
	}
	return res, nil
}

// Run runs a pass every Interval until ctx ends.
func (m *Maintenance) Run(ctx context.Context) error {
	m.defaults()
	t := m.Clock.NewTimer(m.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
		if _, err := m.Pass(ctx); err != nil && ctx.Err() == nil {
			m.Log.Warn("etcd maintenance", "err", err)
		}
		t.Reset(m.Interval)
	}
}
