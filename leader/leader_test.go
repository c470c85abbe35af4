package leader

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ejcloud/elasticjob/election"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

type terms chan *election.Term

func (t terms) Terms() <-chan *election.Term { return t }

// recorder notes what the lifecycle does, in order.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(e string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

func config(kv store.KV, ts terms, rec *recorder, start func(ctx context.Context, t *election.Term, reg *registry.Registry) ([]Loop, error)) Config {
	return Config{
		Terms: ts,
		Registry: func(fence func() []store.Op) *registry.Registry {
			return registry.New(kv, registry.Options{Fence: fence})
		},
		CatchUp: func(ctx context.Context, path string, value []byte, commit func(context.Context, ...store.Op) error) error {
			rec.add("catch-up")
			return commit(ctx, store.Put(path, value))
		},
		Start:   start,
		Leading: func(on bool) { rec.add(map[bool]string{true: "leading", false: "not leading"}[on]) },
	}
}

// TestTermLifecycle: the catch-up barrier comes before the term's loops;
// a loop that fails ends the term, every other loop stops before Serve
// returns, and the term's registry writes are fenced by it.
func TestTermLifecycle(t *testing.T) {
	kv := memory.New()
	defer kv.Close()
	ctx := context.Background()
	if err := kv.Commit(ctx, store.Put("/ha/election/n-1", nil)); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	term := election.NewTerm(ctx, "/ha/election/n-1", 1, nil)
	var reg *registry.Registry
	cfg := config(kv, nil, rec, func(_ context.Context, _ *election.Term, r *registry.Registry) ([]Loop, error) {
		rec.add("start")
		reg = r
		return []Loop{
			{Name: "steady", Run: func(ctx context.Context) error { <-ctx.Done(); rec.add("steady stopped"); return nil }},
			{Name: "failing", Run: func(ctx context.Context) error {
				if err := r.Term().SetFrameworkID(ctx, "fw"); err != nil { // a fenced write while leading
					return err
				}
				return errors.New("boom")
			}},
		}, nil
	})
	err := Serve(term, cfg)
	if err == nil || err.Error() != "failing: boom" {
		t.Fatalf("Serve = %v, want the failing loop's error", err)
	}
	if term.Context().Err() == nil {
		t.Fatal("a failed loop did not end the term")
	}
	want := []string{"catch-up", "start", "leading", "steady stopped", "not leading"}
	if got := rec.list(); len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[4] != want[4] {
		t.Fatalf("events %v, want %v", got, want)
	}
	if id, _ := registry.New(kv).Term().FrameworkID(ctx); id != "fw" {
		t.Fatalf("the write while leading did not land: %q", id)
	}
	if err := kv.Commit(ctx, store.Delete("/ha/election/n-1", store.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if err := reg.Term().SetFrameworkID(ctx, "late"); !errors.Is(err, registry.ErrFenced) {
		t.Fatalf("a write after the election node went: %v, want ErrFenced", err)
	}
}

// TestFailedTermPausesBeforeTheNext: Run serves terms one after another;
// after a term whose work failed, the next term starts FailurePause after
// the failed one began, not a nanosecond sooner, so a failure that recurs
// at once does not spin. In a synctest bubble: the real clock is the
// bubble's, and synctest.Wait says Run is parked on its pause.
func TestFailedTermPausesBeforeTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kv := memory.New()
		defer kv.Close()
		ts := make(terms, 2)
		rec := &recorder{}
		started := make(chan int64, 2)
		cfg := config(kv, ts, rec, func(_ context.Context, term *election.Term, _ *registry.Registry) ([]Loop, error) {
			started <- term.Seq()
			if term.Seq() == 1 {
				return nil, errors.New("cannot start")
			}
			return []Loop{{Name: "steady", Run: func(ctx context.Context) error { <-ctx.Done(); return nil }}}, nil
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- Run(ctx, cfg) }()
		one := election.NewTerm(ctx, "", 1, nil)
		ts <- one
		if seq := <-started; seq != 1 {
			t.Fatalf("started term %d", seq)
		}
		two := election.NewTerm(ctx, "", 2, nil)
		ts <- two
		time.Sleep(FailurePause - time.Nanosecond)
		synctest.Wait() // Run is parked on the rest of its pause
		select {
		case seq := <-started:
			t.Fatalf("term %d started within the pause after a failure", seq)
		default:
		}
		if one.Context().Err() == nil {
			t.Fatal("the failed term was not ended")
		}
		time.Sleep(time.Nanosecond)
		if seq := <-started; seq != 2 {
			t.Fatalf("started term %d, want 2", seq)
		}
		two.End(errors.New("stepped down"))
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
