package crd

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkCreateToRegistered: a CloudJob created (through the fake dynamic client: no
// API server, no network) to its job in the registry, with the API's checks, the owner
// record and the registry write. The real cluster's figure (API server, admission
// webhook, watch) is TestDefinitionsAsKubernetesObjects's log line; docs/benchmarks.md.
func BenchmarkCreateToRegistered(b *testing.B) {
	reg, _, srv := newAPI()
	dyn := fakeDynamic()
	applied := make(chan string, 1)
	r := &Reconciler{Dynamic: dyn, Defs: srv, Registry: reg, Resync: time.Hour, Log: slog.New(slog.DiscardHandler),
		Applied: func(_, _, name string, _ int64) { applied <- name }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	gvr := Kinds[1].GVR()
	// The first create waits for the informers to sync.
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		name := fmt.Sprintf("j%d", i)
		if _, err := dyn.Resource(gvr).Namespace("default").Create(ctx, cloudJob(name, "0/30 * * * * ?"), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if got := <-applied; got != name {
			b.Fatalf("applied %s, want %s", got, name)
		}
	}
	b.StopTimer()
	cancel()
	<-done
}
