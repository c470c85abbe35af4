package registry

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/etcd"
	"github.com/ejcloud/elasticjob/store/etcd/etcdtest"
)

// eachFireStore is eachStore and a one-member etcd cluster: the fire
// commit's conditions on every store the product runs on.
func eachFireStore(t *testing.T, f func(t *testing.T, kv store.KV)) {
	eachStore(t, f)
	t.Run("etcd", func(t *testing.T) {
		if testing.Short() {
			t.Skip("starts an etcd member")
		}
		c := etcdtest.Start(t, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		kv, err := etcd.Open(ctx, etcd.Options{Endpoints: c.Endpoints(), Prefix: "/registry-test"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { kv.Close() })
		f(t, kv)
	})
}

// jobSum is the fingerprint of job's stored configuration, as the
// scheduler's catalog decoded it (Stored.Sum).
func jobSum(t *testing.T, r *Registry, job string) uint64 {
	t.Helper()
	n, err := r.Config().StoredJob(t.Context(), job)
	if err != nil {
		t.Fatal(err)
	}
	return n.Sum()
}

func fireOf(t *testing.T, r *Registry, instant time.Time, config uint64) []string {
	t.Helper()
	void, err := r.Work().TriggerFires(t.Context(), map[string]CronFire{"j": {At: instant, Instant: instant, Config: config}}, instant, nil)
	if err != nil {
		t.Fatal(err)
	}
	return void
}

// TestFireOfAReplacedConfigurationIsVoid: a fire carries the stored
// configuration its instant was computed from; an update (or a new
// registration under the name) committed before the fire's reads or
// between them and its commit voids it, for an instant after the change
// as before it (else the old cron's instant after a cron update runs).
// A fire of the current configuration lands.
func TestFireOfAReplacedConfigurationIsVoid(t *testing.T) {
	changes := map[string]func(ctx context.Context, api *Registry, at time.Time) error{
		"update": func(ctx context.Context, api *Registry, at time.Time) error {
			j, err := api.Config().Job(ctx, "j")
			if err != nil {
				return err
			}
			j.Cron = "0/3 * * * * ?"
			return api.Config().UpdateJobAt(ctx, j, at)
		},
		"update without an instant": func(ctx context.Context, api *Registry, _ time.Time) error {
			j, err := api.Config().Job(ctx, "j")
			if err != nil {
				return err
			}
			j.Cron = "0/3 * * * * ?"
			return api.Config().UpdateJob(ctx, j)
		},
		"deregister and register": func(ctx context.Context, api *Registry, at time.Time) error {
			j, err := api.Config().Job(ctx, "j")
			if err != nil {
				return err
			}
			if err := api.Config().DeleteJob(ctx, "j"); err != nil {
				return err
			}
			j.Cron = "0/3 * * * * ?"
			return api.Config().AddJobAt(ctx, j, at)
		},
	}
	eachFireStore(t, func(t *testing.T, under store.KV) {
		for _, name := range []string{"update", "update without an instant", "deregister and register"} {
			for _, when := range []string{"before the reads", "in flight"} {
				t.Run(fmt.Sprintf("%s %s", name, when), func(t *testing.T) {
					fires, api, kv := gateRigOn(t, under, t0)
					ctx := t.Context()
					t.Cleanup(func() { _ = api.Config().DeleteJob(context.Background(), "j") })
					old := jobSum(t, api, "j")
					changed := t0.Add(1500 * time.Millisecond)
					change := func() {
						if err := changes[name](ctx, api, changed); err != nil {
							t.Error(err)
						}
					}
					if when == "in flight" {
						kv.before = change
					} else {
						change()
					}
					if void := fireOf(t, fires, t0.Add(2*time.Second), old); !slices.Equal(void, []string{"j"}) {
						t.Errorf("void %v, want the old configuration's fire of an instant after the change", void)
					}
					if rd := count(t, api, "j"); rd.Count != 0 {
						t.Fatalf("pending %d after the %s, want none", rd.Count, name)
					}
					if void := fireOf(t, fires, t0.Add(3*time.Second), jobSum(t, api, "j")); len(void) != 0 {
						t.Fatalf("void %v: the new configuration's fire", void)
					}
					if rd := count(t, api, "j"); rd.Count != 1 {
						t.Fatalf("pending %d, want the new configuration's fire", rd.Count)
					}
				})
			}
		}
	})
}
