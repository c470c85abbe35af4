package main

import (
	"context"
	"testing"

	"github.com/ejcloud/elasticjob/config"
	"github.com/ejcloud/elasticjob/engine/mesos/embedded"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store/memory"
)

// A namespace's record sets its own caps field by field; what it leaves
// out, and a namespace without a record, takes the settings.
func TestNamespaceCapsFromTheRecord(t *testing.T) {
	reg := registry.New(memory.New())
	pids, none := int64(100), int64(0)
	if _, err := reg.Tenancy().PutNamespace(context.Background(), namespace.Record{Name: "pay",
		Caps: &namespace.HostCaps{PidsMax: &pids, DiskMB: &none}}); err != nil {
		t.Fatal(err)
	}
	caps := namespaceCaps(config.Config{NamespacePidsMax: 8192, NamespaceMemMB: 2048, NamespaceDiskMB: 4096}, reg)
	if got, want := caps("pay"), (embedded.NamespaceCaps{PidsMax: 100, MemMB: 2048, DiskMB: 0}); got != want {
		t.Errorf("pay: %+v, want %+v", got, want)
	}
	if got, want := caps("search"), (embedded.NamespaceCaps{PidsMax: 8192, MemMB: 2048, DiskMB: 4096}); got != want {
		t.Errorf("search (no record): %+v, want %+v", got, want)
	}
}
