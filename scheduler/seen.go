package scheduler

import (
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/clock"
)

// seen records when each job's ready entry was first seen committed: the
// launch metrics count from there (the trigger's own commit is the API's
// cost, not the launcher's). The ready-queue watch writes it, the
// launcher reads and clears it.
type seen struct {
	clock clock.Clock
	mu    sync.Mutex
	at0   map[string]time.Time
}

func (s *seen) note(job string, present bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.at0 == nil {
		s.at0 = map[string]time.Time{}
	}
	if !present {
		delete(s.at0, job)
	} else if _, ok := s.at0[job]; !ok {
		s.at0[job] = s.clock.Now()
	}
}

func (s *seen) at(job string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.at0[job]
}

// take returns and forgets when job's ready entry was first seen.
func (s *seen) take(job string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.at0[job]
	delete(s.at0, job)
	return t
}
