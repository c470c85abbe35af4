package soak

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine/mesos"
)

// On a shape of several clusters a change may move its job: an update
// naming one of the clusters, or all of them.
func TestChangeMovesAJobBetweenClusters(t *testing.T) {
	var mu sync.Mutex
	var moves [][]string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/job/update" {
			var body struct {
				Clusters []string `json:"clusters"`
			}
			b, _ := io.ReadAll(r.Body)
			if err := json.Unmarshal(b, &body); err != nil {
				t.Errorf("update body %s: %v", b, err)
			}
			if body.Clusters != nil {
				mu.Lock()
				moves = append(moves, body.Clusters)
				mu.Unlock()
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	names := []string{ClusterLocal, ClusterRemote}
	w := &Workload{APIs: []string{srv.URL}, Log: slog.New(slog.DiscardHandler), Clusters: names}
	const cron = "*/2 * * * * ?"
	w.specs = map[string]*jobSpec{"j": {Job: Job{Name: "j", Windows: []Window{{From: time.Now(), Cron: cron}}},
		body: map[string]any{"cron": cron}, changer: true, open: true}}
	w.order = []string{"j"}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 40 {
		w.change(context.Background(), rng, "j")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(moves) == 0 {
		t.Fatal("40 changes on two clusters moved the job not once")
	}
	for _, m := range moves {
		if len(m) == 0 || len(m) > 2 || !slices.Contains(names, m[0]) || (len(m) == 2 && m[0] == m[1]) {
			t.Errorf("moved to %v: want one of %v, or both", m, names)
		}
	}
}

// Without clusters the changes draw as they always did: no move.
func TestChangeMovesNothingOnOneCluster(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		if len(b) > 0 && json.Unmarshal(b, &body) == nil {
			if _, ok := body["clusters"]; ok {
				t.Errorf("%s %s names clusters: %s", r.Method, r.URL.Path, b)
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	w := &Workload{APIs: []string{srv.URL}, Log: slog.New(slog.DiscardHandler)}
	w.specs = map[string]*jobSpec{"j": {Job: Job{Name: "j", Windows: []Window{{From: time.Now(), Cron: "*/2 * * * * ?"}}},
		body: map[string]any{"cron": "*/2 * * * * ?"}, changer: true, open: true}}
	w.order = []string{"j"}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		w.change(context.Background(), rng, "j")
	}
}

// The clusters shape's faults: the remote cluster lost for longer than
// task_unreachable_timeout at most, and cut off for short enough that the
// client's backoff subscribes again well within it.
func TestClustersFaults(t *testing.T) {
	var names []string
	for _, k := range (&Clusters{}).Faults() {
		names = append(names, k.Name)
		switch k.Name {
		case "leader-cut-from-master":
			// the rest of the bound is the reconciliation's, on a loaded machine
			if by := resubscribedBy(k.MaxHold, mesos.DefaultBackoffMin, mesos.DefaultBackoffMax); by > clustersUnreachable-3*time.Second {
				t.Errorf("a cut held up to %s is subscribed again by %s: not 3 s under task_unreachable_timeout %s", k.MaxHold, by, clustersUnreachable)
			}
		case "agents-killed":
			if k.MaxHold <= clustersUnreachable {
				t.Errorf("the remote cluster lost for %s at most, never past task_unreachable_timeout %s", k.MaxHold, clustersUnreachable)
			}
		}
	}
	want := []string{"agents-killed", "leader-cut-from-master", ClusterDrained, NamespaceMoved}
	if !slices.Equal(names, want) {
		t.Errorf("faults %v, want %v", names, want)
	}
}

// The latest re-subscription after a cut: the first retry surely after
// the heal, at its latest. The 6 s cut that outlasted the bound came back
// by 12.7 s.
func TestResubscribedBy(t *testing.T) {
	for _, c := range []struct{ hold, want time.Duration }{
		{0, 100 * time.Millisecond},
		{time.Second, 3100 * time.Millisecond},
		{3 * time.Second, 6300 * time.Millisecond},
		{3150 * time.Millisecond, 6300 * time.Millisecond},
		{6 * time.Second, 12700 * time.Millisecond},
		{11 * time.Second, 22700 * time.Millisecond}, // the waits capped at 10 s
	} {
		if got := resubscribedBy(c.hold, mesos.DefaultBackoffMin, mesos.DefaultBackoffMax); got != c.want {
			t.Errorf("after a cut of %s: by %s, want %s", c.hold, got, c.want)
		}
	}
}

// With a real Mesos build the shape has a third cluster and its master's
// kill; without, the namespace goes where it always went.
func TestClustersWithARealCluster(t *testing.T) {
	two := &Clusters{}
	if got, want := two.destinations(), [][]string{{ClusterLocal}, {ClusterRemote}, {ClusterLocal, ClusterRemote}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("two clusters: destinations %v, want %v", got, want)
	}
	three := &Clusters{MesosHome: "/nowhere"}
	if got, want := three.Names(), []string{ClusterLocal, ClusterRemote, ClusterReal}; !slices.Equal(got, want) {
		t.Errorf("names %v, want %v", got, want)
	}
	if got, want := three.destinations()[3], []string{ClusterLocal, ClusterReal, ClusterRemote}; !slices.Equal(got, want) {
		t.Errorf("all of them: %v, want %v", got, want)
	}
	kinds := three.Faults()
	if last := kinds[len(kinds)-1].Name; len(kinds) != 5 || last != MasterKilled {
		t.Errorf("%d faults, the last %s; want 5, the last %s", len(kinds), last, MasterKilled)
	}
	// the master's kill, its restart (10 s on a loaded machine) and the
	// client's next retry stay under the real cluster's own bound
	if by := resubscribedBy(kinds[len(kinds)-1].MaxHold+10*time.Second, mesos.DefaultBackoffMin, mesos.DefaultBackoffMax); by >= realLostAfter {
		t.Errorf("a master killed for %s is subscribed to again by %s, past lost_after %s", kinds[len(kinds)-1].MaxHold, by, realLostAfter)
	}
	if err := three.startReal(context.Background()); err == nil || !strings.Contains(err.Error(), "no Mesos build at /nowhere (-mesos-home)") {
		t.Errorf("a missing build: %v", err)
	}
}
