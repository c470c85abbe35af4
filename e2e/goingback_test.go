//go:build e2e

package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// What the original reads, and so what going back to it needs (docs/upgrading.md, "Going
// back to the original"). The original is Java and not installable here, so this is the
// layout contract its services read, checked on the tree this scheduler leaves: after the
// procedure (this scheduler stopped, its tasks ended, /state/ready, /state/running and
// /state/failover deleted), every app and job this scheduler did not change is byte for
// byte what the original wrote (3.0.x's YAML, 2.1.x's JSON); the disable flags and
// /ha/framework_id are bare strings as the original writes them; those three subtrees hold
// nothing; and /config/app and /config/job, whose every child the original decodes, hold
// the original's alone.
// goBack runs the going-back procedure on the tree under ns and checks what the original
// would read there against the tree it wrote (original).
func goBack(t *testing.T, servers, ns string, original map[string]string) {
	t.Helper()
	conn, _, err := zk.Connect(strings.Split(servers, ","), 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	root := "/" + ns
	for _, sub := range []string{"/state/ready", "/state/running", "/state/failover"} { // the procedure's step
		deleteTree(t, conn, root+sub)
	}
	for p, v := range original {
		if strings.HasPrefix(p, "/state/ready") || strings.HasPrefix(p, "/state/running") || strings.HasPrefix(p, "/state/failover") {
			continue
		}
		got, _, err := conn.Get(root + p)
		if err != nil {
			t.Errorf("going back: %s: %v", p, err)
			continue
		}
		if p == "/ha/framework_id" {
			if s := string(got); s == "" || strings.ContainsAny(s, "{}\"\n ") {
				t.Errorf("going back: /ha/framework_id is %q, not the bare id the original reads", s)
			}
			continue
		}
		if string(got) != v {
			t.Errorf("going back: %s changed though this scheduler never changed it:\n got %q\nwant %q", p, got, v)
		}
	}
	for _, p := range []string{"/state/disable/job", "/state/disable/app"} {
		names, _, err := conn.Children(root + p)
		if err == zk.ErrNoNode {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			v, _, err := conn.Get(root + p + "/" + n)
			if err != nil {
				t.Fatal(err)
			}
			if json.Valid(v) && strings.HasPrefix(string(v), "{") {
				t.Errorf("going back: %s/%s holds JSON %s, not the original's bare name", p, n, v)
			}
		}
	}
	for _, sub := range []string{"/state/ready", "/state/running", "/state/failover"} {
		if names, _, err := conn.Children(root + sub); err == nil && len(names) > 0 {
			t.Errorf("going back: %s still holds %v after the procedure", sub, names)
		}
	}
	// The original lists /config/app and /config/job and decodes every child: nothing of
	// this scheduler's own (its other nodes lie beside, in paths the original never reads).
	for _, dir := range []string{"/config/app", "/config/job"} {
		names, _, err := conn.Children(root + dir)
		if err != nil {
			t.Fatalf("going back: %s: %v", dir, err)
		}
		for _, n := range names {
			if _, ok := original[dir+"/"+n]; !ok {
				t.Errorf("going back: %s/%s is not the original's", dir, n)
			}
		}
	}
}

func deleteTree(t *testing.T, conn *zk.Conn, p string) {
	t.Helper()
	children, _, err := conn.Children(p)
	if err == zk.ErrNoNode {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range children {
		deleteTree(t, conn, p+"/"+c)
	}
	if err := conn.Delete(p, -1); err != nil && err != zk.ErrNoNode {
		t.Fatalf("delete %s: %v", p, err)
	}
}
