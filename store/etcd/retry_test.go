package etcd

import (
	"context"
	"errors"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// A call that etcd failed with "leader changed" (an election while a linearizable read
// waited: a member list under load) is asked again; another error, or the fifth failure,
// is returned.
func TestRetryLeaderChanged(t *testing.T) {
	calls := 0
	err := retryLeaderChanged(t.Context(), func() error {
		if calls++; calls < 3 {
			return rpctypes.ErrLeaderChanged
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("err %v after %d calls, want success at the third", err, calls)
	}
	other := errors.New("permission denied")
	calls = 0
	if err := retryLeaderChanged(t.Context(), func() error { calls++; return other }); !errors.Is(err, other) || calls != 1 {
		t.Fatalf("another error: %v after %d calls, want it at once", err, calls)
	}
	calls = 0
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := retryLeaderChanged(ctx, func() error { calls++; return rpctypes.ErrLeaderChanged }); !errors.Is(err, rpctypes.ErrLeaderChanged) || calls != 1 {
		t.Fatalf("with the context done: %v after %d calls", err, calls)
	}
}
