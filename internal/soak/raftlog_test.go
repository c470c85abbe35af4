package soak

import (
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
)

func putOp(k, v string) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(k), Value: []byte(v)}}}
}

// A member's log as etcd writes it: RaftWrites lists the writes to the
// keys asked for, in log order, a transaction's by branch.
func TestRaftWritesListsAKeysWrites(t *testing.T) {
	dir := t.TempDir()
	w, err := wal.Create(zap.NewNop(), dir+"/member/wal", nil)
	if err != nil {
		t.Fatal(err)
	}
	reqs := []*pb.InternalRaftRequest{
		{Txn: &pb.TxnRequest{Success: []*pb.RequestOp{putOp("/n/state/ready/sk1", "\x01{\"count\":1}"), putOp("/n/g", "")},
			Failure: []*pb.RequestOp{putOp("/n/state/ready/sk1", "\x01{\"count\":9}")}}},
		{Put: &pb.PutRequest{Key: []byte("/n/state/ready/sk2"), Value: []byte("x")}},
		{Txn: &pb.TxnRequest{Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte("/n/state/ready/sk1")}}}}}},
	}
	var ents []*raftpb.Entry
	for i, r := range reqs {
		b, err := proto.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		ents = append(ents, &raftpb.Entry{Term: proto.Uint64(1), Index: proto.Uint64(uint64(i + 1)), Type: raftpb.EntryType_EntryNormal.Enum(), Data: b})
	}
	if err := w.Save(&raftpb.HardState{Term: proto.Uint64(1), Commit: proto.Uint64(3)}, ents); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := RaftWrites(dir, "ready/sk1")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, x := range got {
		lines = append(lines, x.String())
	}
	want := `1 if: put /n/state/ready/sk1 {"count":1}
1 else: put /n/state/ready/sk1 {"count":9}
3 if: delete /n/state/ready/sk1`
	if s := strings.Join(lines, "\n"); s != want {
		t.Errorf("got\n%s\nwant\n%s", s, want)
	}
	if _, err := RaftWrites(t.TempDir(), "x"); err == nil || !strings.Contains(err.Error(), "no etcd WAL") {
		t.Errorf("a directory without a log: %v", err)
	}
}
