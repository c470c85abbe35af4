package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

// unreachable is a registry whose writes fail as ZooKeeper's do when the
// connection is lost mid-request.
type unreachable struct{ store.KV }

func (unreachable) Commit(context.Context, ...store.Op) error {
	return fmt.Errorf("zk store create /config/app/a: %w (%w)", store.ErrUnavailable, errors.New("zk: connection closed"))
}

// A write the registry could not reach answers 503 with Retry-After (the
// client retries), not 500.
func TestWriteWithRegistryUnreachable(t *testing.T) {
	e := newEnv(t, func(o *api.Options, _ *api.Credentials) { o.Registry = registry.New(unreachable{memory.New()}) })
	r := e.request(http.MethodPost, "/api/app", `{"appName":"a","appURL":"http://h/a.tgz","bootstrapScript":"b.sh"}`)
	e.wantError(r, http.StatusServiceUnavailable, "unavailable", "connection closed")
	if got := r.Header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After = %q, want 1", got)
	}
}
