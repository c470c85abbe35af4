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
// task_unreachable_timeout at most, and cut off for shorter at most.
func TestClustersFaults(t *testing.T) {
	var names []string
	for _, k := range (&Clusters{}).Faults() {
		names = append(names, k.Name)
		switch k.Name {
		case "leader-cut-from-master":
			if k.MaxHold >= clustersUnreachable {
				t.Errorf("a cut held up to %s, not under task_unreachable_timeout %s", k.MaxHold, clustersUnreachable)
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
	if err := three.startReal(context.Background()); err == nil || !strings.Contains(err.Error(), "no Mesos build at /nowhere (-mesos-home)") {
		t.Errorf("a missing build: %v", err)
	}
}
