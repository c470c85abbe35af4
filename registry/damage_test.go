package registry

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/identity"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/secrets"
	"github.com/ejcloud/elasticjob/store"
)

// damagedPaths are one undecodable value in each subtree, in the default
// namespace's tree, namespace pay's, and the scheduler's own entries.
var damagedPaths = []string{
	"/config/app/legacy_app",
	"/config/job/legacy_job",
	"/config/workflow/wf",
	"/state/ready/legacy_job",
	"/state/running/j1/j1@-@7",
	"/state/failover/j1/j1@-@3",
	"/state/runs/j1",
	"/state/trigger_keys/k1",
	"/state/workflow/wf/run1",
	"/state/workflow_keys/wf/k1",
	"/state/waiting/ready/j1",
	"/namespaces/pay/config/app/legacy_app",
	"/namespaces/pay/config/job/bad",
	"/namespaces/pay/state/ready/bad",
	"/namespaces/pay/state/running/good/good@-@0",
	"/namespaces/broken",
	"/secrets/default/bad",
	"/auth/tokens/bad",
	"/kube/owners/CloudJob/bad",
}

// populate registers good apps and jobs in the default namespace and pay,
// then writes every damaged path straight into the store (as zkCli would).
func populate(t *testing.T, ctx context.Context, kv store.KV, r *Registry) {
	t.Helper()
	if _, err := r.Tenancy().PutNamespace(ctx, namespace.Record{Name: "pay"}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []*Registry{r.In(namespace.Default), r.In("pay")} {
		a := app.Default()
		a.AppName, a.AppURL, a.BootstrapScript = "app", "http://h/a.tgz", "bin/start.sh"
		if err := ns.Config().AddApp(ctx, a); err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"j1", "good"} {
			j := jobs.Default()
			j.JobName, j.AppName = n, "app"
			if err := ns.Config().AddJob(ctx, j); err != nil {
				t.Fatal(err)
			}
			if _, err := ns.Work().Trigger(ctx, n, false, t0); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := r.Tenancy().AddToken(ctx, identity.APIToken{ID: "good", Namespace: namespace.Default}); err != nil {
		t.Fatal(err)
	}
	if err := r.Tenancy().PutSecret(ctx, secrets.Sealed{Meta: secrets.Meta{Namespace: namespace.Default, Name: "good"}}, NewSecret); err != nil {
		t.Fatal(err)
	}
	for i, p := range damagedPaths {
		v := []byte(`{"appName":"legacy_app","appURL":"http://h/a.t`) // half written: neither JSON nor YAML
		if i%2 == 1 {
			v = []byte(`{"jobName":"x","cron":`) // half written
		}
		if err := kv.Commit(ctx, store.Put(p, v)); err != nil {
			t.Fatalf("put %s: %v", p, err)
		}
	}
}

func TestDamagedEntriesAreSetAside(t *testing.T) {
	eachStore(t, func(t *testing.T, kv store.KV) {
		ctx := context.Background()
		var logs bytes.Buffer
		r := New(kv)
		r.damage = NewDamage(slog.New(slog.NewTextHandler(&logs, nil)))
		populate(t, ctx, kv, r)

		apps, err := r.Config().Apps(ctx)
		if err != nil {
			t.Fatalf("apps: %v", err)
		}
		if names := appNames(apps); !slices.Equal(names, []string{"app", "pay~app"}) {
			t.Errorf("apps = %v", names)
		}
		js, err := r.Config().Jobs(ctx)
		if err != nil {
			t.Fatalf("jobs: %v", err)
		}
		if len(js) != 4 {
			t.Errorf("jobs = %d, want 4 (the good ones)", len(js))
		}
		ready, err := r.Work().ReadyQueue(ctx)
		if err != nil || len(ready) != 4 {
			t.Errorf("ready = %d, %v; want the 4 good entries", len(ready), err)
		}
		var m QueueMemo
		if rq, err := r.Work().ReadyQueueMemo(ctx, &m); err != nil || len(rq) != 4 {
			t.Errorf("ready (memo) = %d, %v", len(rq), err)
		}
		if _, err := r.Work().FailoverQueueMemo(ctx, &m); err != nil {
			t.Errorf("failover (memo): %v", err)
		}
		if _, err := r.Work().FailoverQueue(ctx); err != nil {
			t.Errorf("failover: %v", err)
		}
		if _, err := r.Work().RunningTasks(ctx); err != nil {
			t.Errorf("running: %v", err)
		}
		if _, err := r.Work().WaitingReasons(ctx); err != nil {
			t.Errorf("waiting: %v", err)
		}
		if _, err := r.Flows().Workflows(ctx); err != nil {
			t.Errorf("workflows: %v", err)
		}
		if _, err := r.Flows().WorkflowRuns(ctx, "wf"); err != nil {
			t.Errorf("workflow runs: %v", err)
		}
		if nss, err := r.Tenancy().Namespaces(ctx); err != nil || len(nss) != 2 {
			t.Errorf("namespaces = %v, %v", nss, err)
		}
		if s, err := r.Tenancy().Secrets(ctx, namespace.Default); err != nil || len(s) != 1 {
			t.Errorf("secrets = %v, %v", s, err)
		}
		if tk, err := r.Tenancy().Tokens(ctx, namespace.Default); err != nil || len(tk) != 1 {
			t.Errorf("tokens = %v, %v", tk, err)
		}
		if _, err := r.Config().Owned(ctx, "CloudJob"); err != nil {
			t.Errorf("owned: %v", err)
		}
		if pay, err := r.In("pay").Config().Apps(ctx); err != nil || len(pay) != 1 {
			t.Errorf("pay's apps = %v, %v", pay, err)
		}
		// a cron fire of every job, one of them with a damaged entry
		if err := r.Work().TriggerMany(ctx, map[string]bool{"j1": false, "legacy_job": false, "pay~bad": true}, t0, t0, nil); err != nil {
			t.Errorf("cron fires: %v", err)
		}
		// the one entry read alone says what is wrong
		if _, err := r.Config().App(ctx, "legacy_app"); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "/config/app/legacy_app") {
			t.Errorf("App(legacy_app) = %v, want a damaged entry's error naming its path", err)
		}

		found, err := r.Scan(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var paths []string
		for _, d := range found {
			paths = append(paths, d.Path)
			if d.Error == "" || d.Subtree == "" {
				t.Errorf("%+v: no error or subtree", d)
			}
		}
		want := slices.Sorted(slices.Values(damagedPaths))
		if !slices.Equal(paths, want) {
			t.Errorf("scan found\n%v\nwant\n%v", paths, want)
		}
		// each entry logged once, whatever the number of rounds
		for _, p := range damagedPaths {
			if c := strings.Count(logs.String(), "path="+p+" "); c != 1 {
				t.Errorf("%s logged %d times, want 1", p, c)
			}
		}
		if got := r.damage.Counts()["config/app"]; got != 2 {
			t.Errorf("config/app damaged = %d, want 2", got)
		}

		// removed and repaired entries leave the list
		if err := kv.Commit(ctx, store.Delete("/config/app/legacy_app", store.AnyVersion)); err != nil {
			t.Fatal(err)
		}
		if err := kv.Commit(ctx, store.Put("/state/runs/j1", []byte(`{}`))); err != nil {
			t.Fatal(err)
		}
		if err := r.Recheck(ctx); err != nil {
			t.Fatal(err)
		}
		if n := r.damage.Len(); n != len(damagedPaths)-2 {
			t.Errorf("after a removal and a repair %d entries, want %d", n, len(damagedPaths)-2)
		}
	})
}

func appNames(as []app.Config) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.AppName)
	}
	slices.Sort(out)
	return out
}

func TestSubtreeAndNamespaceOfStorePath(t *testing.T) {
	for _, c := range []struct{ path, subtree, ns string }{
		{"/config/app/x", "config/app", "default"},
		{"/namespaces/pay/config/job/x", "config/job", "pay"},
		{"/namespaces/pay/state/running/j/j@-@0", "state/running", "pay"},
		{"/namespaces/pay", "namespaces", ""},
		{"/secrets/pay/s", "secrets", "pay"},
		{"/auth/tokens/t", "auth/tokens", ""},
		{"/state/waiting/failover/j/j@-@1", "state/waiting/failover", "default"},
	} {
		if got := SubtreeOf(c.path); got != c.subtree {
			t.Errorf("SubtreeOf(%s) = %q, want %q", c.path, got, c.subtree)
		}
		if got := NamespaceOfStorePath(c.path); got != c.ns {
			t.Errorf("NamespaceOfStorePath(%s) = %q, want %q", c.path, got, c.ns)
		}
	}
}
