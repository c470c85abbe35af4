package zk

import (
	"context"
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

// openUrgent connects the urgent session and authenticates it like the
// first (the client sends the credentials again on each new session of the
// connection, before any other request). A failure is logged and leaves
// the store with its first session only.
func (s *Store) openUrgent(ctx context.Context, o Options) {
	conn, _, err := zk.Connect(o.Servers, o.SessionTimeout, zk.WithLogger(zkLogger{o.Logger}), zk.WithLogInfo(false))
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
