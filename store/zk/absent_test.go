package zk

import (
	"errors"
	"testing"

	"github.com/ejcloud/elasticjob/store"
)

// TestDeleteOfAnAbsentNodeDeletesOneCreatedMeanwhile: a commit deletes any version of a
// node it read as absent, and another writer creates the node between that read and the
// commit's multi: the commit still leaves the node deleted (its plan guards the
// absence, and is made again when the create landed). A create that survived would let
// a fire's ready entry, created just before a cron update's commit, run the old cron's
// instant after the update was answered.
func TestDeleteOfAnAbsentNodeDeletesOneCreatedMeanwhile(t *testing.T) {
	ns := uniqueNamespace(t)
	s := openTest(t, Options{Namespace: ns})
	other := openTest(t, Options{Namespace: ns})
	ctx := t.Context()
	if err := s.Commit(ctx, store.Put("/state/ready/other", []byte("x")), store.Put("/config/job", []byte("v1"))); err != nil {
		t.Fatal(err)
	}
	created := false
	beforeMulti = func() {
		if !created {
			created = true
			if err := other.Commit(ctx, store.Create("/state/ready/job", []byte("fire"))); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { beforeMulti = nil }()
	if err := s.Commit(ctx, store.Put("/config/job", []byte("v2")), store.Delete("/state/ready/job", store.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if !created {
		t.Fatal("the other writer's create did not run")
	}
	if n, err := other.Get(ctx, "/state/ready/job"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the node created meanwhile survived the delete: %q %v", n.Value, err)
	}
}
