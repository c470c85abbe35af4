package zk

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejcloud/elasticjob/store"
)

// The urgent session. One session answers its requests in the order they
// were sent, and the launch loop queues chains of up to four 512-op multis
// on the store's session: a cron fire's commit queued behind them waited
// 0.05-1.7 s at 100,000 jobs. Commits whose context is store.Urgent go on
// a second session of their own (no watch, no ephemeral node), so they wait
// only for the server's pipeline, not for the multis queued on the first
// session. Every such multi carries the ops it was given, the leader's
// fence check included: a write made after the term's election node was
// deleted (its session expired) fails on either session, and one ordered
// before that deletion is seen by the next leader like any write of the
// term. Reads stay on the first session; while the urgent session has no
// session (connecting, expired and reconnecting), urgent commits use the
// first one.
//
// The urgent session connects to the server the first session is on
// (sameServer), so a read on the first session after an urgent commit
// returned sees it: one server applies commits in order, and the cache's
// re-read of a commit's blind puts goes through the first session. On two
// servers of an ensemble the first session's server could still lag.

// openUrgent connects the urgent session and authenticates it like the
// first (the client sends the credentials again on each new session of the
// connection, before any other request). A failure is logged and leaves
// the store with its first session only.
func (s *Store) openUrgent(ctx context.Context, o Options) {
	conn, _, err := zk.Connect(o.Servers, o.SessionTimeout, zk.WithLogger(zkLogger{o.Logger}), zk.WithLogInfo(false),
		zk.WithHostProvider(&sameServer{first: s.conn.Server}))
	if err != nil {
		s.log.Warn("zk store: no urgent session: fire commits share the first one", "err", err)
		return
	}
	wait, cancel := context.WithTimeout(ctx, urgentWait)
	defer cancel()
	for conn.State() != zk.StateHasSession {
		select {
		case <-wait.Done():
			conn.Close()
			s.log.Warn("zk store: no urgent session: fire commits share the first one", "err", wait.Err())
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	if o.Digest != "" {
		if err := conn.AddAuth("digest", []byte(o.Digest)); err != nil {
			conn.Close()
			s.log.Warn("zk store: no urgent session: fire commits share the first one", "err", err)
			return
		}
	}
	s.urgent = conn
}

// urgentWait bounds how long Open waits for the urgent session.
const urgentWait = 10 * time.Second

// commitConn is the connection a commit under ctx is sent on.
func (s *Store) commitConn(ctx context.Context) *zk.Conn {
	if s.urgent != nil && store.IsUrgent(ctx) && s.urgent.State() == zk.StateHasSession {
		return s.urgent
	}
	return s.conn
}

// sameServer is the urgent session's zk.HostProvider: each new connection
// tries the first session's server first, then the others in turn.
type sameServer struct {
	first   func() string // the first session's server now
	servers []string
	i       int
	tries   int // Next calls since the last connection
}

func (h *sameServer) Init(servers []string) error {
	if len(servers) == 0 {
		return errors.New("zk store: no servers")
	}
	h.servers = slices.Clone(servers)
	return nil
}

func (h *sameServer) Len() int { return len(h.servers) }

func (h *sameServer) Next() (string, bool) {
	h.tries++
	if h.tries == 1 {
		if f := h.first(); slices.Contains(h.servers, f) {
			return f, false
		}
	}
	h.i = (h.i + 1) % len(h.servers)
	return h.servers[h.i], h.tries > len(h.servers)
}

func (h *sameServer) Connected() { h.tries = 0 }
