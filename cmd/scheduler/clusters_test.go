package main

import (
	"log/slog"
	"testing"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine/clusters"
)

// nopTerm is a cluster's engine that is never called: Health reads only the composition.
type nopTerm struct{ clusters.Term }

// TestClusterHealth: the API sees the clusters' connections only while a term's composed
// engine runs here; otherwise (a standby, between terms) none.
func TestClusterHealth(t *testing.T) {
	l := &leaderWork{}
	if got := l.clusterHealth(); got != nil {
		t.Fatalf("no term, yet health %v", got)
	}
	ce, err := clusters.New([]clusters.Member{{Name: "dc1", Term: nopTerm{}}, {Name: "k8s", Term: nopTerm{}}}, clock.Real{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	l.composed.Store(ce)
	got := l.clusterHealth()
	if len(got) != 2 || got[0].Name != "dc1" || got[1].Name != "k8s" || got[0].Connected || got[1].Connected {
		t.Fatalf("health before any connection: %+v", got)
	}
}
