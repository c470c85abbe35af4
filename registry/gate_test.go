package registry

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

// interposedKV runs a change once, just before the first commit that
// writes a ready entry reaches the store: what another writer commits
// while a fire's commit is in flight, after its reads.
type interposedKV struct {
	store.KV
	before func()
}

func (k *interposedKV) Commit(ctx context.Context, ops ...store.Op) error {
	if f := k.before; f != nil && slices.ContainsFunc(ops, func(op store.Op) bool { return strings.HasPrefix(op.Path, ReadyPath+"/") }) {
		k.before = nil
		f()
	}
	return k.KV.Commit(ctx, ops...)
}

// gateRig is a registry whose fire commits can be interposed on (fires),
// and one over the same store for the API's changes (api), with job j
// registered at t0.
func gateRig(t *testing.T, registeredAt time.Time) (fires, api *Registry, kv *interposedKV) {
	t.Helper()
	mem := memory.New()
	t.Cleanup(func() { mem.Close() })
	return gateRigOn(t, mem, registeredAt)
}

// gateRigOn is gateRig over the store under.
func gateRigOn(t *testing.T, under store.KV, registeredAt time.Time) (fires, api *Registry, kv *interposedKV) {
	t.Helper()
	kv = &interposedKV{KV: under}
	fires, api = New(kv), New(under)
	gateRigApp(t, api)
	if err := api.Config().AddJobAt(t.Context(), gateJob(), registeredAt); err != nil {
		t.Fatal(err)
	}
	return fires, api, kv
}

// gateJob is the rig's job j, every second.
func gateJob() jobs.Config {
	j := jobs.Default()
	j.JobName, j.AppName, j.Cron = "j", "app", "* * * * * ?"
	return j
}

// gateRigApp registers app "app" (kept when there) and returns job j
// to register.
func gateRigApp(t *testing.T, api *Registry) jobs.Config {
	t.Helper()
	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript = "app", "http://h/a.tgz", "bin/start.sh"
	if err := api.Config().AddApp(t.Context(), a); err != nil && !errors.Is(err, ErrAppExists) { // a store shared by subtests
		t.Fatal(err)
	}
	return gateJob()
}

func fireAt(t *testing.T, r *Registry, instant time.Time) []string {
	t.Helper()
	void, err := r.Work().TriggerFires(t.Context(), map[string]CronFire{"j": {At: instant, Instant: instant}}, instant, func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	return void
}

// TestFireNeverLandsAfterADisable: a disable committed between a fire's
// reads and its commit (the fire staged for 07:46:18, the disable at
// 07:46:16.6 landing while the commit was in flight: zk fault soak seed
// 53) leaves nothing pending, whatever the leader does after; the enable
// that follows finds nothing to run. Without the gate the fire landed
// and ran 5 ms after the enable.
func TestFireNeverLandsAfterADisable(t *testing.T) {
	for _, tc := range []struct {
		name       string
		registered time.Time // zero: a job registered before gates were written
	}{{"gated at registration", t0.Add(-time.Minute)}, {"registered without a gate", time.Time{}}} {
		t.Run(tc.name, func(t *testing.T) {
			fires, api, kv := gateRig(t, tc.registered)
			ctx := t.Context()
			instant := t0.Add(18 * time.Second)
			kv.before = func() {
				if err := api.Config().SetDisabled(ctx, "job", "j", true, t0.Add(16598*time.Millisecond)); err != nil {
					t.Error(err)
				}
			}
			if void := fireAt(t, fires, instant); !slices.Equal(void, []string{"j"}) {
				t.Errorf("void %v, want the disabled job's fire", void)
			}
			if err := api.Config().SetDisabled(ctx, "job", "j", false, t0.Add(20202*time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			if rd := count(t, api, "j"); rd.Count != 0 {
				t.Fatalf("after the enable the job has %d pending execution(s) of its disabled time", rd.Count)
			}
			w, err := api.Schedule().Watermark(ctx)
			if err != nil || !w.Until.Equal(instant) {
				t.Fatalf("watermark %+v %v: the batch's instant is still recorded", w, err)
			}
		})
	}
}

// TestDisableClearsAFireThatLandedBefore: a fire committed before the
// disable (staged ahead of its instant) is cleared by the disable's own
// commit, not by the leader after it saw the change.
func TestDisableClearsAFireThatLandedBefore(t *testing.T) {
	fires, api, _ := gateRig(t, t0)
	if void := fireAt(t, fires, t0.Add(2*time.Second)); len(void) != 0 {
		t.Fatalf("void %v", void)
	}
	if rd := count(t, api, "j"); rd.Count != 1 {
		t.Fatalf("pending %d, want the fire", rd.Count)
	}
	if err := api.Config().SetDisabled(t.Context(), "job", "j", true, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if rd := count(t, api, "j"); rd.Count != 0 {
		t.Fatalf("the disable left %d pending", rd.Count)
	}
}

// TestFireBeforeAChangeIsVoid: a fire committed after an enable, an
// update or a new registration, for an instant before it, is void (the
// change would have cleared it); a fire of a later instant lands.
func TestFireBeforeAChangeIsVoid(t *testing.T) {
	changes := map[string]func(ctx context.Context, api *Registry, at time.Time) error{
		"enable": func(ctx context.Context, api *Registry, at time.Time) error {
			if err := api.Config().SetDisabled(ctx, "job", "j", true, at.Add(-time.Second)); err != nil {
				return err
			}
			return api.Config().SetDisabled(ctx, "job", "j", false, at)
		},
		"update": func(ctx context.Context, api *Registry, at time.Time) error {
			j, err := api.Config().Job(ctx, "j")
			if err != nil {
				return err
			}
			j.Cron = "0/2 * * * * ?"
			return api.Config().UpdateJobAt(ctx, j, at)
		},
		"deregister and register": func(ctx context.Context, api *Registry, at time.Time) error {
			j, err := api.Config().Job(ctx, "j")
			if err != nil {
				return err
			}
			if err := api.Config().DeleteJob(ctx, "j"); err != nil {
				return err
			}
			return api.Config().AddJobAt(ctx, j, at)
		},
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			fires, api, kv := gateRig(t, t0)
			ctx := t.Context()
			changed := t0.Add(2 * time.Second)
			kv.before = func() {
				if err := change(ctx, api, changed); err != nil {
					t.Error(err)
				}
			}
			if void := fireAt(t, fires, t0.Add(time.Second)); !slices.Equal(void, []string{"j"}) {
				t.Errorf("void %v, want the fire of an instant before the %s", void, name)
			}
			if rd := count(t, api, "j"); rd.Count != 0 {
				t.Fatalf("pending %d after the %s, want none", rd.Count, name)
			}
			if void := fireAt(t, fires, t0.Add(3*time.Second)); len(void) != 0 {
				t.Fatalf("the fire after the %s was void", name)
			}
			if rd := count(t, api, "j"); rd.Count != 1 {
				t.Fatalf("pending %d, want the later fire", rd.Count)
			}
		})
	}
}

// TestFireOfADeregisteredJobIsVoid: a fire whose job went meanwhile
// creates no entry, and the gate stays off.
func TestFireOfADeregisteredJobIsVoid(t *testing.T) {
	fires, api, kv := gateRig(t, time.Time{})
	ctx := t.Context()
	kv.before = func() {
		if err := api.Config().DeleteJob(ctx, "j"); err != nil {
			t.Error(err)
		}
	}
	if void := fireAt(t, fires, t0); !slices.Equal(void, []string{"j"}) {
		t.Errorf("void %v, want the deregistered job's fire", void)
	}
	if _, err := api.kv.Get(ctx, ReadyPath+"/j"); err == nil {
		t.Errorf("a pending execution was written for a job that is gone")
	}
	if n, err := api.kv.Get(ctx, gatePath("j")); err != nil || string(n.Value) != gateOff {
		t.Errorf("gate %q %v, want off", n.Value, err)
	}
}

// TestPruneGatesForgetsDeregisteredJobsOnly: a deregistered job's gate is
// stamped when first seen and forgotten a lifetime later; a disabled
// job's gate, and one whose job is registered again meanwhile, stay.
func TestPruneGatesForgetsDeregisteredJobsOnly(t *testing.T) {
	_, api, _ := gateRig(t, t0)
	ctx := t.Context()
	j, err := api.Config().Job(ctx, "j")
	if err != nil {
		t.Fatal(err)
	}
	k := j
	k.JobName = "k"
	if err := api.Config().AddJobAt(ctx, k, t0); err != nil {
		t.Fatal(err)
	}
	if err := api.Config().SetDisabled(ctx, "job", "k", true, t0); err != nil {
		t.Fatal(err)
	}
	if err := api.Config().DeleteJob(ctx, "j"); err != nil {
		t.Fatal(err)
	}
	gates := func() map[string]string {
		nodes, err := api.kv.List(ctx, ChangedJobPath)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, n := range nodes {
			out[lastSegment(n.Path)] = string(n.Value)
		}
		return out
	}
	prune := func(now time.Time) {
		if err := api.Config().PruneGates(ctx, now, now.Add(-GateLifetime)); err != nil {
			t.Fatal(err)
		}
	}
	prune(t0.Add(time.Minute)) // stamps j's
	prune(t0.Add(time.Hour))   // not yet a lifetime
	if g := gates(); g["j"] != string(gateOffValue(t0.Add(time.Minute))) || !strings.HasPrefix(g["k"], gateOff) {
		t.Fatalf("gates %v: want j stamped, k off", g)
	}
	prune(t0.Add(time.Hour + 2*time.Minute))
	if g := gates(); len(g) != 1 || g["k"] == "" {
		t.Fatalf("gates %v: want only the disabled job's", g)
	}
	// registered again before the prune: kept
	if err := api.Config().AddJobAt(ctx, j, t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := api.Config().DeleteJob(ctx, "j"); err != nil {
		t.Fatal(err)
	}
	prune(t0.Add(3 * time.Hour))
	if err := api.Config().AddJobAt(ctx, j, t0.Add(4*time.Hour)); err != nil {
		t.Fatal(err)
	}
	prune(t0.Add(6 * time.Hour))
	if g := gates(); g["j"] != string(gateAt(t0.Add(4*time.Hour))) {
		t.Fatalf("gates %v: a registered job's gate was pruned", g)
	}
}

// TestCatchUpNeverLandsAfterADisable: a takeover's catch-up is behind the
// gate too: a disable landing while its commit is in flight voids the
// job's missed fires, and the watermark still moves.
func TestCatchUpNeverLandsAfterADisable(t *testing.T) {
	fires, api, kv := gateRig(t, t0)
	ctx := t.Context()
	kv.before = func() {
		if err := api.Config().SetDisabled(ctx, "job", "j", true, t0.Add(9*time.Second)); err != nil {
			t.Error(err)
		}
	}
	until := t0.Add(10 * time.Second)
	if err := fires.Schedule().TriggerMissed(ctx, map[string]Missed{"j": {Fires: 3, Misfire: true, After: t0}}, until); err != nil {
		t.Fatal(err)
	}
	if rd := count(t, api, "j"); rd.Count != 0 {
		t.Fatalf("the disabled job has %d pending execution(s) of the catch-up", rd.Count)
	}
	if w, err := api.Schedule().Watermark(ctx); err != nil || !w.Until.Equal(until) {
		t.Fatalf("watermark %+v %v, want %s", w, err, until)
	}
}

// TestJobChangedAtReadsTheGate: the instant of a job's registration,
// update or enable, none while it is disabled or gone.
func TestJobChangedAtReadsTheGate(t *testing.T) {
	_, api, _ := gateRig(t, t0)
	ctx := t.Context()
	want := func(step string, at time.Time) {
		t.Helper()
		got, err := api.Config().JobChangedAt(ctx, "j")
		if err != nil || !got.Equal(at) {
			t.Fatalf("%s: changed at %v (%v), want %v", step, got, err, at)
		}
	}
	want("registered", t0)
	if err := api.Config().SetDisabled(ctx, "job", "j", true, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	want("disabled", time.Time{})
	if err := api.Config().SetDisabled(ctx, "job", "j", false, t0.Add(22700*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	want("enabled", t0.Add(22700*time.Millisecond))
	j, err := api.Config().Job(ctx, "j")
	if err != nil {
		t.Fatal(err)
	}
	if err := api.Config().UpdateJobAt(ctx, j, t0.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	want("updated", t0.Add(30*time.Second))
	if err := api.Config().DeleteJob(ctx, "j"); err != nil {
		t.Fatal(err)
	}
	want("deregistered", time.Time{})
	if got, err := api.Config().JobChangedAt(ctx, "never"); err != nil || !got.IsZero() {
		t.Fatalf("an unknown job: %v, %v", got, err)
	}
}

// TestRequeueAfterADisableDropsTheExecution: a launch took the fire's
// execution, the job was disabled while the launch was under way, and the
// launch was rolled back: the execution is not put back (the disable would
// have cleared it, had it still been queued), so it does not run after the
// enable; the roll-back's own writes commit. Enabled again, a roll-back
// puts its execution back as before.
func TestRequeueAfterADisableDropsTheExecution(t *testing.T) {
	_, api, _ := gateRig(t, t0)
	ctx := t.Context()
	instant := t0.Add(2 * time.Second)
	rollback := func(marker string) *Change {
		ch := api.Change()
		ch.ops = append(ch.ops, store.Put("/state/test/"+marker, []byte("rolled back")))
		return ch
	}
	if err := api.Config().SetDisabled(ctx, "job", "j", true, instant.Add(30*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if err := api.Work().Requeue(ctx, rollback("off"), "j", nil, "cron", true, instant, instant, instant.Add(time.Second), nil); err != nil {
		t.Fatal(err)
	}
	if rd := count(t, api, "j"); rd.Count != 0 {
		t.Fatalf("a roll-back after the disable put back %d executions, want none", rd.Count)
	}
	if _, err := api.kv.Get(ctx, "/state/test/off"); err != nil {
		t.Fatalf("the roll-back's own writes: %v", err)
	}
	if err := api.Config().SetDisabled(ctx, "job", "j", false, instant.Add(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	if rd := count(t, api, "j"); rd.Count != 0 {
		t.Fatalf("%d executions pending after the enable, want none", rd.Count)
	}
	later := instant.Add(5 * time.Second)
	if err := api.Work().Requeue(ctx, rollback("on"), "j", nil, "cron", true, later, later, later.Add(time.Second), nil); err != nil {
		t.Fatal(err)
	}
	if rd := count(t, api, "j"); rd.Count != 1 || !rd.FirstNominal().Equal(later) {
		t.Fatalf("enabled: a roll-back put back %d executions serving %v, want 1 serving %v", rd.Count, rd.FirstNominal(), later)
	}
}
