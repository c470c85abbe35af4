package scheduler

import (
	"context"

	"github.com/ejcloud/elasticjob/registry"
)

// The loop keeps a mirror of /state/running: only the loop writes running
// entries (launch commits and status updates), so after each successful
// commit it updates the mirror instead of re-reading and re-decoding every
// running task on every launch round. The mirror is reloaded from the store
// after a conflict (someone else wrote) and after a resync.

// runningAll returns every running task (loading the mirror if needed).
// Callers must not modify the maps.
func (s *Scheduler) runningAll(ctx context.Context) (map[string]map[int]registry.Running, error) {
	if s.running == nil {
		all, err := s.Registry.RunningTasks(ctx)
		if err != nil {
			return nil, err
		}
		s.running = all
	}
	return s.running, nil
}

// runningOf returns one job's running tasks by item.
func (s *Scheduler) runningOf(ctx context.Context, job string) (map[int]registry.Running, error) {
	all, err := s.runningAll(ctx)
	if err != nil {
		return nil, err
	}
	return all[job], nil
}

// putRunning records a committed running entry in the mirror.
func (s *Scheduler) putRunning(job string, item int, rt registry.Running) {
	if s.running == nil {
		return // not loaded: the next read loads it from the store
	}
	m := s.running[job]
	if m == nil {
		m = map[int]registry.Running{}
		s.running[job] = m
	}
	m[item] = rt
}

// dropRunning records a committed removal in the mirror.
func (s *Scheduler) dropRunning(job string, item int) {
	if m := s.running[job]; m != nil {
		delete(m, item)
		if len(m) == 0 {
			delete(s.running, job)
		}
	}
}

// reloadRunning forgets the mirror; the next read reloads it.
func (s *Scheduler) reloadRunning() { s.running = nil }
