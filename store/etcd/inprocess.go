package etcd

import (
	"context"
	"errors"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
)

// errMemberStopped: the in-process client's member has stopped (final:
// not retried).
var errMemberStopped = errors.New("etcd member stopped (in-process client)")

// inProcess is a client of the member that calls its server directly
// (etcd's v3client: no gRPC, no encoding). Without gRPC it has no retry
// interceptor: its Get is retried here on the passing errors a gRPC
// client retries a read on (a leader change, no leader: retryRead).
// Its reads, transactions and lease calls fail once the member stopped: a
// stopped server still forwards a lease renewal to the raft leader over
// its peer transport, so a term on a member that was killed in this
// process (tests; a member etcd stopped itself) would otherwise keep its
// lease, where a gRPC client's calls fail with the server gone.
func (m *Member) inProcess() *clientv3.Client {
	c := v3client.New(m.e.Server)
	stopped := m.e.Server.StopNotify()
	check := func() error {
		select {
		case <-stopped:
			return errMemberStopped
		default:
			return nil
		}
	}
	c.KV = liveKV{KV: c.KV, check: check}
	c.Lease = liveLease{Lease: c.Lease, check: check}
	return c
}

// liveKV is a KV whose calls fail once check does.
type liveKV struct {
	clientv3.KV
	check func() error
}

func (k liveKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	return retryRead(ctx, func() (*clientv3.GetResponse, error) {
		if err := k.check(); err != nil {
			return nil, err
		}
		return k.KV.Get(ctx, key, opts...)
	})
}

func (k liveKV) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	if err := k.check(); err != nil {
		return nil, err
	}
	return k.KV.Put(ctx, key, val, opts...)
}

func (k liveKV) Delete(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	if err := k.check(); err != nil {
		return nil, err
	}
	return k.KV.Delete(ctx, key, opts...)
}

func (k liveKV) Do(ctx context.Context, op clientv3.Op) (clientv3.OpResponse, error) {
	if err := k.check(); err != nil {
		return clientv3.OpResponse{}, err
	}
	return k.KV.Do(ctx, op)
}

func (k liveKV) Txn(ctx context.Context) clientv3.Txn {
	return liveTxn{Txn: k.KV.Txn(ctx), check: k.check}
}

// liveTxn is a Txn whose Commit fails once check does.
type liveTxn struct {
	clientv3.Txn
	check func() error
}

func (t liveTxn) If(cs ...clientv3.Cmp) clientv3.Txn { return liveTxn{t.Txn.If(cs...), t.check} }
func (t liveTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	return liveTxn{t.Txn.Then(ops...), t.check}
}
func (t liveTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	return liveTxn{t.Txn.Else(ops...), t.check}
}

func (t liveTxn) Commit() (*clientv3.TxnResponse, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	return t.Txn.Commit()
}

// liveLease is a Lease whose grants, renewals and revocations fail once
// check does.
type liveLease struct {
	clientv3.Lease
	check func() error
}

func (l liveLease) Grant(ctx context.Context, ttl int64) (*clientv3.LeaseGrantResponse, error) {
	if err := l.check(); err != nil {
		return nil, err
	}
	return l.Lease.Grant(ctx, ttl)
}

func (l liveLease) KeepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	if err := l.check(); err != nil {
		return nil, err
	}
	return l.Lease.KeepAliveOnce(ctx, id)
}

func (l liveLease) Revoke(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseRevokeResponse, error) {
	if err := l.check(); err != nil {
		return nil, err
	}
	return l.Lease.Revoke(ctx, id)
}
