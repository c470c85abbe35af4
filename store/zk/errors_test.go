package zk

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/ejcloud/elasticjob/store"
)

// A lost connection or session is ErrUnavailable (the API answers 503, a
// client retries), never an unclassified error (500).
func TestSentinelOfConnectionLoss(t *testing.T) {
	brokenPipe := &net.OpError{Op: "write", Net: "tcp", Err: fmt.Errorf("write: %w", syscall.EPIPE)}
	for _, err := range []error{zk.ErrConnectionClosed, zk.ErrSessionExpired, zk.ErrNoServer, zk.ErrSessionMoved, brokenPipe, syscall.ECONNRESET} {
		if got := opErr("create", "/state/x", err); !errors.Is(got, store.ErrUnavailable) || !errors.Is(got, err) {
			t.Errorf("opErr(%v) = %v, want it to wrap store.ErrUnavailable and the cause", err, got)
		}
	}
	if got := opErr("get", "/x", zk.ErrNoNode); errors.Is(got, store.ErrUnavailable) || !errors.Is(got, store.ErrNotFound) {
		t.Errorf("opErr(ErrNoNode) = %v", got)
	}
}
