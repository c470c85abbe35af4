package detector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejcloud/elasticjob/internal/testproxy"
)

// waitFor bounds every wait on ZooKeeper; nothing sleeps, tests block on channels or poll.
const waitFor = 20 * time.Second

// fakeMaster is one ZooKeeper session that joins the group as a Mesos master does: an
// ephemeral sequential json.info_ znode holding its MasterInfo as JSON.
type fakeMaster struct {
	conn *zk.Conn
	node string
}

func session(t *testing.T, server string) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect([]string{server}, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkLogger{slog.New(slog.DiscardHandler)}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

func join(t *testing.T, server, group, label, data string, acl []zk.ACL) *fakeMaster {
	t.Helper()
	conn := session(t, server)
	if acl == nil {
		acl = zk.WorldACL(zk.PermAll)
	}
	ensure(t, conn, group)
	prefix := group + "/"
	if label != "" {
		prefix += label + "_"
	}
	node, err := conn.Create(prefix, []byte(data), zk.FlagEphemeral|zk.FlagSequence, acl)
	if err != nil {
		t.Fatalf("join %s: %v", group, err)
	}
	return &fakeMaster{conn: conn, node: path.Base(node)}
}

func ensure(t *testing.T, conn *zk.Conn, p string) {
	t.Helper()
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		if _, err := conn.Create(p[:i], nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("create %s: %v", p[:i], err)
		}
	}
}

func masterJSON(port int) string {
	return fmt.Sprintf(`{"address":{"hostname":"127.0.0.1","ip":"127.0.0.1","port":%d},"hostname":"127.0.0.1","id":"id-%d","ip":16777343,"pid":"master@127.0.0.1:%d","port":%d,"version":"1.11.0","capabilities":[{"type":"SOMETHING_NEW"}]}`, port, port, port, port)
}

func uniqueGroup(t *testing.T) string {
	return fmt.Sprintf("/ej-detector-test/%s-%d", strings.ReplaceAll(t.Name(), "/", "_"), time.Now().UnixNano())
}

func newDetector(t *testing.T, raw string) *Detector {
	t.Helper()
	u, err := ParseURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(u, Options{SessionTimeout: 4 * time.Second, RetryMin: 10 * time.Millisecond, RetryMax: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

func leader(t *testing.T, d *Detector) (string, <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	u, moved, err := d.Leader(ctx)
	if err != nil {
		t.Fatalf("Leader: %v", err)
	}
	return u, moved
}

func waitMoved(t *testing.T, moved <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-moved:
	case <-time.After(waitFor):
		t.Fatalf("leadership did not move: %s", what)
	}
}

// TestLowestSequenceLeadsAndChangesAreSeen writes the group as Mesos masters do and follows the
// leadership as members join and leave.
func TestLowestSequenceLeadsAndChangesAreSeen(t *testing.T) {
	server := testproxy.ZK(t)
	group := uniqueGroup(t)
	a := join(t, server, group, labelJSON, masterJSON(5051), nil)
	b := join(t, server, group, labelJSON, masterJSON(5052), nil)
	ensure(t, session(t, server), group+"/log_replicas") // the replicated log's node: not a member

	d := newDetector(t, "zk://"+server+group)
	u, moved := leader(t, d)
	if u != "http://127.0.0.1:5051" {
		t.Fatalf("leader = %s, want the lowest sequence (5051)", u)
	}
	// A later member joining does not move the leadership.
	join(t, server, group, labelJSON, masterJSON(5053), nil)
	select {
	case <-moved:
		t.Fatal("a new non-leading member moved the leadership")
	default:
	}
	// The leader's session ends: its ephemeral znode vanishes and the next lowest leads.
	a.conn.Close()
	waitMoved(t, moved, "leader's session closed")
	u, moved = leader(t, d)
	if u != "http://127.0.0.1:5052" {
		t.Fatalf("after the leader left: %s, want 5052", u)
	}
	if m, ok := d.Current(); !ok || m.Node != b.node || m.ID != "id-5052" {
		t.Fatalf("Current = %+v, %v (b is %s)", m, ok, b.node)
	}
}

func TestUnlabelledMemberAndNoLeader(t *testing.T) {
	server := testproxy.ZK(t)
	group := uniqueGroup(t)
	d := newDetector(t, "zk://"+server+group) // the group does not exist yet

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, _, err := d.Leader(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Leader without masters = %v, want it to block until ctx ends", err)
	}
	old := join(t, server, group, "", "master@127.0.0.1:6001", nil) // creates the path: exists watch
	u, moved := leader(t, d)
	if u != "http://127.0.0.1:6001" {
		t.Fatalf("leader = %s", u)
	}
	old.conn.Close()
	waitMoved(t, moved, "the only master left")
	if _, ok := d.Current(); ok {
		t.Fatal("a leader is reported after every master left")
	}
}

// TestBadLeaderDataIsNotUsed: a leader whose data cannot be read is not subscribed to; the
// next change of the group is still followed.
func TestBadLeaderDataIsNotUsed(t *testing.T) {
	server := testproxy.ZK(t)
	group := uniqueGroup(t)
	bad := join(t, server, group, labelJSON, "{not json", nil)
	join(t, server, group, labelJSON, masterJSON(5061), nil)
	d := newDetector(t, "zk://"+server+group)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if u, _, err := d.Leader(ctx); err == nil {
		t.Fatalf("Leader = %s with unreadable leader data", u)
	}
	bad.conn.Close()
	if u, _ := leader(t, d); u != "http://127.0.0.1:5061" {
		t.Fatalf("leader = %s", u)
	}
}

// TestDigestCredentials: a group only readable with digest credentials is read with the URL's
// user:password and not without them.
func TestDigestCredentials(t *testing.T) {
	server := testproxy.ZK(t)
	group := uniqueGroup(t)
	owner := session(t, server)
	if err := owner.AddAuth("digest", []byte("mesos:s3cret")); err != nil {
		t.Fatal(err)
	}
	ensure(t, owner, path.Dir(group))
	if _, err := owner.Create(group, nil, 0, zk.DigestACL(zk.PermAll, "mesos", "s3cret")); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Create(group+"/json.info_", []byte(masterJSON(5071)), zk.FlagEphemeral|zk.FlagSequence,
		zk.DigestACL(zk.PermAll, "mesos", "s3cret")); err != nil {
		t.Fatal(err)
	}
	if u, _ := leader(t, newDetector(t, "zk://mesos:s3cret@"+server+group)); u != "http://127.0.0.1:5071" {
		t.Fatalf("leader with credentials = %s", u)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if u, _, err := newDetector(t, "zk://"+server+group).Leader(ctx); err == nil {
		t.Fatalf("leader read without credentials: %s", u)
	}
}

func TestCloseEndsLeader(t *testing.T) {
	server := testproxy.ZK(t)
	d := newDetector(t, "zk://"+server+uniqueGroup(t))
	errc := make(chan error, 1)
	go func() {
		_, _, err := d.Leader(context.Background())
		errc <- err
	}()
	d.Close()
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "closed") {
			t.Fatalf("Leader after Close = %v", err)
		}
	case <-time.After(waitFor):
		t.Fatal("Leader did not return after Close")
	}
}

// TestWaitingIsLogged: with no ZooKeeper to talk to, Leader keeps waiting and says so.
func TestWaitingIsLogged(t *testing.T) {
	var logs safeBuffer
	u, err := ParseURL("zk://127.0.0.1:1/mesos")
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(u, Options{SessionTimeout: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, _, err := d.Leader(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Leader = %v", err)
	}
	if out := logs.String(); !strings.Contains(out, "still no leading Mesos master in ZooKeeper") || !strings.Contains(out, "zk_state=") {
		t.Fatalf("log:\n%s", out)
	}
}

type safeBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
