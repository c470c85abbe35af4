//go:build e2e

package ha

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// The observers the chaos tests rely on, checked against a real ZooKeeper
// server: every write is seen with its paths and whether it committed (a
// multi refused for a failed check counts as not committed), and a cut
// gate holds a request until it heals.
func TestProxyRecordsZooKeeperWrites(t *testing.T) {
	t.Parallel()
	servers := sharedEnsemble(t)
	rec := &zkRecorder{}
	g := newGate()
	p := startProxy(t, strings.Split(servers, ",")[0], g, rec.observe)
	conn, _, err := zk.Connect([]string{p.addr()}, 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	root := fmt.Sprintf("/ej-ha-proxy-%d", time.Now().UnixNano())
	acl := zk.WorldACL(zk.PermAll)
	if _, err := conn.Create(root, []byte("x"), 0, acl); err != nil {
		t.Fatal(err)
	}
	_, err = conn.Multi(&zk.CheckVersionRequest{Path: root + "/missing", Version: -1},
		&zk.CreateRequest{Path: root + "/fenced", Acl: acl})
	if err == nil {
		t.Fatal("a multi with a failing check committed")
	}
	if _, err := conn.Multi(&zk.CheckVersionRequest{Path: root, Version: -1},
		&zk.SetDataRequest{Path: root, Data: []byte("y"), Version: -1}); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set(root+"/missing", nil, -1); err == nil {
		t.Fatal("set of a missing node succeeded")
	}

	g.Cut()
	done := make(chan error, 1)
	go func() { _, err := conn.Create(root+"/after-heal", nil, 0, acl); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("a create went through a cut gate: %v", err)
	case <-time.After(300 * time.Millisecond): // within the session timeout: the connection survives
	}
	g.Heal()
	if err := <-done; err != nil {
		t.Fatalf("create after the heal: %v", err)
	}

	want := []string{
		"create [" + root + "] committed",
		"multi [check " + root + "/missing; create " + root + "/fenced] refused",
		"multi [check " + root + "; setData " + root + "] committed",
		"setData [" + root + "/missing] refused",
		"create [" + root + "/after-heal] committed",
	}
	// The recorder parses a reply after the proxy handed its bytes on, so
	// the client may have its answer before the recorder marks it.
	var got []string
	eventually(t, 5*time.Second, func() bool {
		got = got[:0]
		for _, w := range rec.since(time.Time{}) {
			verdict := "refused"
			if w.ok {
				verdict = "committed"
			}
			if !w.replied {
				verdict = "no reply"
			}
			got = append(got, fmt.Sprintf("%s [%s] %s", w.op, strings.Join(w.paths, "; "), verdict))
		}
		return strings.Join(got, "\n") == strings.Join(want, "\n")
	}, "recorded writes:\n%s\nwant:\n%s", lazy(func() any { return strings.Join(got, "\n") }), strings.Join(want, "\n"))
}

// The Mesos observer pairs each call with its answer on a keep-alive
// connection, a streamed answer included.
func TestProxyRecordsMesosCalls(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch {
		case strings.Contains(string(b), "SUBSCRIBE"):
			w.WriteHeader(http.StatusOK)
			fmt.Fprint(w, "stream")
		case strings.Contains(string(b), "ACCEPT"):
			w.WriteHeader(http.StatusBadRequest)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()
	rec := &mesosRecorder{}
	p := startProxy(t, strings.TrimPrefix(srv.URL, "http://"), newGate(), rec.observe)
	for _, typ := range []string{"SUBSCRIBE", "ACCEPT", "DECLINE"} {
		resp, err := http.Post("http://"+p.addr()+"/api/v1/scheduler", "application/json", strings.NewReader(`{"type":"`+typ+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	want := "SUBSCRIBE 200 true, ACCEPT 400 false, DECLINE 202 true"
	var got []string
	eventually(t, 5*time.Second, func() bool {
		got = got[:0]
		for _, c := range rec.since(time.Time{}) {
			got = append(got, fmt.Sprintf("%s %d %v", c.typ, c.status, c.accepted()))
		}
		return strings.Join(got, ", ") == want
	}, "the recorded calls %v to be %s", lazy(func() any { return got }), want)
}

// TestMesosCallActs: what a deposed leader may not have taken by the master is any call of
// the scheduler API and any request but a read; its reads (the agents' flags) change nothing.
func TestMesosCallActs(t *testing.T) {
	for _, tc := range []struct {
		c    mesosCall
		want bool
	}{
		{mesosCall{path: "/slaves", typ: http.MethodGet, replied: true, status: 200}, false},
		{mesosCall{path: "/state", typ: http.MethodGet, replied: true, status: 200}, false},
		{mesosCall{path: "/api/v1/scheduler", typ: "SUBSCRIBE", replied: true, status: 200}, true},
		{mesosCall{path: "/api/v1/scheduler", typ: "ACCEPT", replied: true, status: 202}, true},
		{mesosCall{path: "/api/v1/scheduler", typ: "KILL", replied: true, status: 202}, true},
		{mesosCall{path: "/api/v1/scheduler", typ: "REVIVE", replied: true, status: 202}, true},
		{mesosCall{path: "/api/v1/scheduler", typ: "DECLINE", replied: true, status: 403}, false}, // refused
		{mesosCall{path: "/api/v1/scheduler", typ: "ACCEPT"}, false},                              // no reply
		{mesosCall{path: "/master/teardown", typ: http.MethodPost, replied: true, status: 200}, true},
	} {
		if got := tc.c.acts(); got != tc.want {
			t.Errorf("%v acts = %v, want %v", tc.c, got, tc.want)
		}
	}
}
