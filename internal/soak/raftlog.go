package soak

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
)

// RaftWrite is one write an etcd member's raft log holds: a proposal as
// the leader appended it, before its compares were evaluated. A
// transaction's writes are listed with the branch they belong to
// (Branch "if": applied when its compares held, "else": when they did
// not); a plain put or delete has Branch "".
type RaftWrite struct {
	Index  uint64 // the raft entry's index: the log's order
	Op     string // "put" or "delete"
	Key    string
	Value  string // a put's value, its codec's leading version byte left out
	Branch string
}

func (w RaftWrite) String() string {
	s := fmt.Sprintf("%d %s %s", w.Index, w.Op, w.Key)
	if w.Branch != "" {
		s = fmt.Sprintf("%d %s: %s %s", w.Index, w.Branch, w.Op, w.Key)
	}
	if w.Op == "put" {
		s += " " + w.Value
	}
	return s
}

// RaftWrites reads the raft log of an etcd member of a kept run (the etcd, real-mesos and kube
// shapes) and lists its writes to keys containing sub, in log order: what a registry key (a job's
// ready entry, a running entry) held at each commit, which the schedulers' logs do not say. dir is
// a member's WAL directory, a directory holding member/wal or etcd/member/wal, or a run's directory
// (its first replica's log: they hold the same entries).
func RaftWrites(dir, sub string) ([]RaftWrite, error) {
	walDir, err := findWAL(dir)
	if err != nil {
		return nil, err
	}
	w, err := wal.OpenForRead(zap.NewNop(), walDir, &walpb.Snapshot{})
	if err != nil {
		return nil, fmt.Errorf("soak: raft log %s: %w", walDir, err)
	}
	defer w.Close()
	_, _, ents, err := w.ReadAll()
	if err != nil && len(ents) == 0 { // a log cut short by a kill still lists what it holds
		return nil, fmt.Errorf("soak: raft log %s: %w", walDir, err)
	}
	var out []RaftWrite
	for _, e := range ents {
		if e.GetType() != raftpb.EntryType_EntryNormal || len(e.GetData()) == 0 {
			continue
		}
		var r pb.InternalRaftRequest
		if proto.Unmarshal(e.GetData(), &r) != nil {
			continue // not a request (a configuration change's context)
		}
		add := func(branch string, ops []*pb.RequestOp) {
			for _, op := range ops {
				if p := op.GetRequestPut(); p != nil && strings.Contains(string(p.GetKey()), sub) {
					out = append(out, RaftWrite{Index: e.GetIndex(), Op: "put", Key: string(p.GetKey()), Value: value(p.GetValue()), Branch: branch})
				}
				if d := op.GetRequestDeleteRange(); d != nil && strings.Contains(string(d.GetKey()), sub) {
					out = append(out, RaftWrite{Index: e.GetIndex(), Op: "delete", Key: string(d.GetKey()), Branch: branch})
				}
			}
		}
		if p := r.GetPut(); p != nil {
			add("", []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: p}}})
		}
		if d := r.GetDeleteRange(); d != nil {
			add("", []*pb.RequestOp{{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: d}}})
		}
		if t := r.GetTxn(); t != nil {
			add("if", t.GetSuccess())
			add("else", t.GetFailure())
		}
	}
	return out, nil
}

// PrintRaftWrites prints RaftWrites, one a line.
func PrintRaftWrites(out io.Writer, dir, sub string) error {
	ws, err := RaftWrites(dir, sub)
	if err != nil {
		return err
	}
	for _, w := range ws {
		fmt.Fprintln(out, w)
	}
	return nil
}

// value is a stored value as text: the registry's codec writes a version
// byte before it.
func value(b []byte) string {
	if len(b) > 0 && b[0] < ' ' {
		b = b[1:]
	}
	return string(b)
}

// findWAL is the WAL directory dir names (see RaftWrites).
func findWAL(dir string) (string, error) {
	for _, d := range []string{"", "member/wal", "etcd/member/wal", "cluster/s1/etcd/member/wal"} {
		p := filepath.Join(dir, d)
		if ok, _ := filepath.Glob(filepath.Join(p, "*.wal")); len(ok) > 0 {
			return p, nil
		}
	}
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("soak: raft log: %w", err)
	}
	return "", errors.New("soak: raft log: no etcd WAL (*.wal) in " + dir + " nor its member/wal, etcd/member/wal or cluster/s1/etcd/member/wal")
}
