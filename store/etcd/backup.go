package etcd

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A backup is a logical dump of the registry: every node of the store
// (path, version and bytes, as stored) read at one revision, one JSON
// object a line, between a header and a trailer that counts the nodes
// (a truncated file is refused). It leaves out the election's keys and
// everything that is not a node (the guard, the history log). It is
// independent of the prefix and of etcd's own files, so it restores
// into another cluster or prefix, and an operator can read it.
const dumpFormat = "elasticjob-registry-dump"

type dumpHeader struct {
	Format   string    `json:"format"`
	Version  int       `json:"version"`
	Revision int64     `json:"revision"`
	Created  time.Time `json:"created"`
}

type dumpNode struct {
	Path  string `json:"p"`
	Value []byte `json:"v"` // the stored value: version (uvarint) and bytes
}

type dumpTrailer struct {
	End   bool `json:"end"`
	Nodes int  `json:"nodes"`
}

// BackupResult describes a backup or a restore.
type BackupResult struct {
	Nodes    int   `json:"nodes"`
	Revision int64 `json:"revision"` // the revision read at, or the restore's last
	Deleted  int   `json:"deleted,omitempty"`
	Bytes    int64 `json:"bytes,omitempty"`
}

func (a *Admin) excluded(path string) bool {
	for _, x := range a.Exclude {
		if path == x || strings.HasPrefix(path, strings.TrimSuffix(x, "/")+"/") {
			return true
		}
	}
	return false
}

// Backup writes the registry to w.
func (a *Admin) Backup(ctx context.Context, w io.Writer) (BackupResult, error) {
	bw := bufio.NewWriterSize(w, 256<<10)
	enc := json.NewEncoder(bw)
	k := a.s.k
	var res BackupResult
	from, end := k.nodes, prefixEnd(k.nodes)
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(1000)}
		if res.Revision > 0 {
			opts = append(opts, clientv3.WithRev(res.Revision))
		}
		resp, err := a.s.cli.Get(ctx, from, opts...)
		if err != nil {
			return res, fmt.Errorf("etcd backup: read: %w", err)
		}
		if res.Revision == 0 {
			res.Revision = resp.Header.Revision
			if err := enc.Encode(dumpHeader{Format: dumpFormat, Version: 1, Revision: res.Revision, Created: time.Now().UTC()}); err != nil {
				return res, fmt.Errorf("etcd backup: write: %w", err)
			}
		}
		for _, kv := range resp.Kvs {
			p := k.path(string(kv.Key))
			if p == "" || a.excluded(p) {
				continue
			}
			if err := enc.Encode(dumpNode{Path: p, Value: kv.Value}); err != nil {
				return res, fmt.Errorf("etcd backup: write: %w", err)
			}
			res.Nodes++
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	if err := enc.Encode(dumpTrailer{End: true, Nodes: res.Nodes}); err != nil {
		return res, fmt.Errorf("etcd backup: write: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return res, fmt.Errorf("etcd backup: write: %w", err)
	}
	return res, nil
}

// BackupAny is Backup for the API.
func (a *Admin) BackupAny(ctx context.Context, w io.Writer) (any, error) { return a.Backup(ctx, w) }

// readDump reads a whole backup, refusing a truncated or foreign one.
func readDump(r io.Reader) ([]dumpNode, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var h dumpHeader
	if !sc.Scan() {
		return nil, fmt.Errorf("%w: empty", ErrBadBackup)
	}
	if err := json.Unmarshal(sc.Bytes(), &h); err != nil || h.Format != dumpFormat || h.Version != 1 {
		return nil, fmt.Errorf("%w: the first line is not a %s header of version 1", ErrBadBackup, dumpFormat)
	}
	var nodes []dumpNode
	seen := map[string]bool{}
	for line := 2; sc.Scan(); line++ {
		var t dumpTrailer
		if err := json.Unmarshal(sc.Bytes(), &t); err == nil && t.End {
			if t.Nodes != len(nodes) {
				return nil, fmt.Errorf("%w: the trailer counts %d nodes, the file holds %d", ErrBadBackup, t.Nodes, len(nodes))
			}
			return nodes, nil
		}
		var n dumpNode
		if err := json.Unmarshal(sc.Bytes(), &n); err != nil || !strings.HasPrefix(n.Path, "/") || len(n.Value) == 0 {
			return nil, fmt.Errorf("%w: line %d is not a node", ErrBadBackup, line)
		}
		if _, _, err := decode(n.Value); err != nil || seen[n.Path] {
			return nil, fmt.Errorf("%w: line %d: node %s is malformed or repeated", ErrBadBackup, line, n.Path)
		}
		seen[n.Path] = true
		nodes = append(nodes, n)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("etcd restore: read: %w", err)
	}
	return nil, fmt.Errorf("%w: no trailer (truncated)", ErrBadBackup)
}

// Restore replaces the registry with a backup: nodes the backup does
// not hold are deleted, the others put as they were. It holds the
// store's commit guard (no commit interleaves; each transaction is
// conditional on still holding it) and is sent in transactions of at
// most MaxTxnOps operations, so a reader may see it half done, and a
// restore cut short leaves a mix: run it again. At its end it deletes
// the election's keys (Exclude): every term ends and the next leader
// starts from the restored registry.
func (a *Admin) Restore(ctx context.Context, r io.Reader) (BackupResult, error) {
	nodes, err := readDump(r)
	if err != nil {
		return BackupResult{}, err
	}
	k := a.s.k
	lease, err := a.s.lock(ctx)
	if err != nil {
		return BackupResult{}, fmt.Errorf("etcd restore: %w", err)
	}
	defer a.s.unlock(ctx, lease)
	want := map[string]bool{}
	var ops []clientv3.Op
	for _, n := range nodes {
		if a.excluded(n.Path) {
			continue
		}
		key := k.node(n.Path)
		want[key] = true
		ops = append(ops, clientv3.OpPut(key, string(n.Value)))
	}
	var res BackupResult
	from, end := k.nodes, prefixEnd(k.nodes)
	var dels []clientv3.Op
	for {
		resp, err := a.s.cli.Get(ctx, from, clientv3.WithRange(end), clientv3.WithKeysOnly(), clientv3.WithLimit(1000))
		if err != nil {
			return res, fmt.Errorf("etcd restore: list: %w", err)
		}
		for _, kv := range resp.Kvs {
			key := string(kv.Key)
			if p := k.path(key); p != "" && !a.excluded(p) && !want[key] {
				dels = append(dels, clientv3.OpDelete(key))
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	// Deletes first, deepest last is not needed: no watcher orders on it
	// beyond the events it sees; puts after, parents before children
	// (a backup is in key order: by depth, then path).
	ops = append(dels, ops...)
	held := clientv3.Compare(clientv3.LeaseValue(k.guard), "=", int64(lease))
	step := max(1, a.s.maxOps-1)
	for len(ops) > 0 {
		n, size := 0, 0
		for n < len(ops) && n < step {
			sz := len(ops[n].KeyBytes()) + len(ops[n].ValueBytes()) + 16
			if n > 0 && size+sz > a.s.maxBytes {
				break
			}
			size += sz
			n++
		}
		resp, err := a.s.cli.Txn(ctx).If(held).Then(ops[:n]...).Commit()
		if err != nil {
			return res, fmt.Errorf("etcd restore: write: %w (%d nodes written, run it again)", err, res.Nodes)
		}
		if !resp.Succeeded {
			return res, fmt.Errorf("etcd restore: lost the commit guard (its lease expired) after %d nodes: run it again", res.Nodes)
		}
		res.Revision = resp.Header.Revision
		for _, op := range ops[:n] {
			if op.IsDelete() {
				res.Deleted++
			} else {
				res.Nodes++
			}
		}
		ops = ops[n:]
	}
	// Free the guard (a put without the lease moves its mod_revision, so
	// a guarded commit planned before the restore plans again), then end
	// the terms.
	end2 := []clientv3.Op{clientv3.OpPut(k.guard, "")}
	for _, x := range a.Exclude {
		for d := depth(x) + 1; d <= depth(x)+4; d++ {
			end2 = append(end2, clientv3.OpDelete(k.level(x, d), clientv3.WithPrefix()))
		}
	}
	resp, err := a.s.cli.Txn(ctx).If(held).Then(end2...).Commit()
	if err != nil {
		return res, fmt.Errorf("etcd restore: release: %w", err)
	}
	res.Revision = resp.Header.Revision
	return res, nil
}

// RestoreAny is Restore for the API.
func (a *Admin) RestoreAny(ctx context.Context, r io.Reader) (any, error) { return a.Restore(ctx, r) }
