package soak

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Workload is the jobs the soak registers and what it does to them while
// the faults run: triggers with idempotency keys (retried by the client
// with the same key until answered), and configuration changes (cron
// updates, disable/enable, deregister/register) on a set of its own, so
// a trigger never meets a job that went away.
type Workload struct {
	APIs    []string
	Jobs    int
	Seed    uint64
	AppURL  string
	Log     *slog.Logger
	Trigger time.Duration // one trigger this often (0: none)
	Change  time.Duration // one configuration change this often (0: none)
	// Sizes is the jobs' crons, shards and resources (zero: the
	// simulated agents' defaults).
	Sizes Sizes
	// Clusters are the shape's clusters (nil: one): the changes then also
	// move a job, its update naming one of them or all in a drawn order.
	Clusters []string
	// Pinned, when set, is the clusters job i names at its registration
	// (empty: none, its namespace's); drawn from nothing, so a seed draws
	// the same workload with it or without.
	Pinned func(i int) []string

	mu    sync.Mutex
	specs map[string]*jobSpec
	order []string
	next  int // API round robin
}

type jobSpec struct {
	Job
	body    map[string]any
	changer bool
	open    bool // a window is open
	gone    bool // deregistered
}

// periods divide 60, so "*/P" fires every P seconds.
var periods = []int{2, 3, 4, 5, 6, 10}

// Sizes shape the workload's jobs for a shape's engine: a real kubelet
// runs fewer, slower, larger tasks than simulated agents do.
type Sizes struct {
	Periods   []int   // cron periods in seconds, each dividing 60 (nil: 2-10 s)
	MaxShards int     // shards drawn from 1 to this (0: 3)
	CPU       float64 // a job's cpuCount (0: 0.01)
	MemMB     int     // a job's memoryMB (0: 1)
	// AppCPU and AppMemMB are the app's (its executor's) share (0: 0.01, 1).
	AppCPU   float64
	AppMemMB int
}

func (z Sizes) periods() []int {
	if len(z.Periods) == 0 {
		return periods
	}
	return z.Periods
}

func (z Sizes) shards() int  { return cmp.Or(z.MaxShards, 3) }
func (z Sizes) cpu() float64 { return cmp.Or(z.CPU, 0.01) }
func (z Sizes) mem() int     { return cmp.Or(z.MemMB, 1) }

func cronOf(p int) string { return fmt.Sprintf("*/%d * * * * ?", p) }

// Setup publishes the app and registers every job.
func (w *Workload) Setup(ctx context.Context) error {
	rng := rand.New(rand.NewPCG(w.Seed, w.Seed^0x10ad))
	w.specs = map[string]*jobSpec{}
	if err := w.call(ctx, http.MethodPost, "/api/app", map[string]any{"appName": "soak", "appURL": w.AppURL,
		"bootstrapScript": "bin/run.sh", "cpuCount": cmp.Or(w.Sizes.AppCPU, 0.01), "memoryMB": cmp.Or(w.Sizes.AppMemMB, 1), "appCacheEnable": true}, time.Minute); err != nil {
		return err
	}
	for i := range w.Jobs {
		name := fmt.Sprintf("sk%03d", i)
		ps := w.Sizes.periods()
		p := ps[rng.IntN(len(ps))]
		daemon := rng.IntN(20) == 0
		typ := "TRANSIENT"
		if daemon {
			typ = "DAEMON"
		}
		shards := 1 + rng.IntN(w.Sizes.shards())
		misfire, failover := rng.IntN(2) == 0, rng.IntN(2) == 0
		s := &jobSpec{Job: Job{Name: name, Shards: shards, Misfire: misfire, Daemon: daemon}, changer: !daemon && rng.IntN(10) == 0}
		s.body = map[string]any{"jobName": name, "appName": "soak", "jobExecutionType": typ, "cron": cronOf(p), "shardingTotalCount": shards,
			"jobParameter": "soak 0", "cpuCount": w.Sizes.cpu(), "memoryMB": w.Sizes.mem(), "failover": failover, "misfire": misfire}
		if w.Pinned != nil {
			if to := w.Pinned(i); len(to) > 0 {
				s.body["clusters"] = to
			}
		}
		sent := time.Now()
		if err := w.call(ctx, http.MethodPost, "/api/job/register", s.body, time.Minute); err != nil {
			return err
		}
		s.Windows = []Window{{From: time.Now(), Opening: sent, Cron: cronOf(p)}}
		s.open = true
		w.specs[name] = s
		w.order = append(w.order, name)
	}
	return nil
}

// Run triggers and changes jobs until ctx ends.
func (w *Workload) Run(ctx context.Context) {
	var wg sync.WaitGroup
	rng := rand.New(rand.NewPCG(w.Seed, w.Seed^0xc4a6))
	var plain, changers []string
	for _, n := range w.order {
		if s := w.specs[n]; s.changer {
			changers = append(changers, n)
		} else if !s.Daemon {
			plain = append(plain, n)
		}
	}
	// each goroutine draws from its own generator, seeded here (a
	// *rand.Rand is not safe for concurrent use)
	triggerRng, changeRng := rand.New(rand.NewPCG(rng.Uint64(), 1)), rand.New(rand.NewPCG(rng.Uint64(), 2))
	if w.Trigger > 0 && len(plain) > 0 {
		seq := 0
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := triggerRng
			for sleep(ctx, w.Trigger) {
				seq++
				name := plain[r.IntN(len(plain))]
				k := fmt.Sprintf("k%d-%s", seq, name)
				wg.Add(1)
				go func() { defer wg.Done(); w.trigger(ctx, name, k) }()
			}
		}()
	}
	if w.Change > 0 && len(changers) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := changeRng
			for sleep(ctx, w.Change) {
				w.change(ctx, r, changers[r.IntN(len(changers))])
			}
		}()
	}
	wg.Wait()
}

// trigger sends one trigger, retrying with the same key for up to 30 s.
func (w *Workload) trigger(ctx context.Context, job, key string) {
	body := map[string]any{"jobName": job, "jobParameter": "soak 0 " + key, "idempotencyKey": key}
	sent := time.Now()
	err := w.call(context.WithoutCancel(ctx), http.MethodPost, "/api/job/trigger", body, 30*time.Second)
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.specs[job]
	if s.Sent == nil {
		s.Sent = map[string]time.Time{}
	}
	s.Sent[key] = sent
	if err == nil {
		s.Keys = append(s.Keys, key)
	} else {
		s.Tried = append(s.Tried, key)
	}
}

// change applies one configuration change; the job's windows close when
// the request is sent and open again once it was answered.
func (w *Workload) change(ctx context.Context, r *rand.Rand, name string) {
	w.mu.Lock()
	s := w.specs[name]
	open, checked := s.open, s.changer
	w.mu.Unlock()
	if !checked {
		// a change of unknown outcome took it out of the checks: no more changes
		return
	}
	sent := time.Now()
	var err error
	opened := false
	gone := s.gone
	ops := 3
	if len(w.Clusters) > 1 {
		ops = 4 // and a move: drawn only here, so the other shapes draw as before
	}
	switch op := r.IntN(ops); {
	case !open && gone:
		err = w.call(ctx, http.MethodPost, "/api/job/register", s.body, time.Minute)
		opened = true
	case !open:
		err = w.call(ctx, http.MethodPost, "/api/job/"+name+"/enable", nil, time.Minute)
		opened = true
	case op == 0: // a new cron
		ps := w.Sizes.periods()
		p := ps[r.IntN(len(ps))]
		s.body["cron"] = cronOf(p)
		err = w.call(ctx, http.MethodPut, "/api/job/update", s.body, time.Minute)
		opened = true
	case op == 3: // a move: the job's next executions run where the update names
		to := w.moveTo(r)
		s.body["clusters"] = to
		w.Log.Info("workload: moving a job", "job", name, "clusters", to)
		err = w.call(ctx, http.MethodPut, "/api/job/update", s.body, time.Minute)
		opened = true
	case op == 1:
		err = w.call(ctx, http.MethodPost, "/api/job/"+name+"/disable", nil, time.Minute)
	default:
		err = w.call(ctx, http.MethodDelete, "/api/job/"+name+"/deregister", nil, time.Minute)
		gone = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if open {
		s.Windows[len(s.Windows)-1].To = sent
		s.Windows[len(s.Windows)-1].Closing = time.Now() // answered
	}
	s.open, s.gone = false, gone && !opened
	if err != nil {
		// unknown outcome: keep the job out of the checks from now on
		w.Log.Warn("workload: change failed; the job is no longer checked", "job", name, "err", err)
		s.changer = false
		s.body = nil
		s.Unchecked = sent
		return
	}
	if opened {
		s.Windows = append(s.Windows, Window{From: time.Now(), Opening: sent, Cron: s.body["cron"].(string)})
		s.open = true
	}
}

// moveTo draws a job's clusters: one of the shape's, or all of them in a
// drawn order.
func (w *Workload) moveTo(r *rand.Rand) []string {
	if r.IntN(3) == 0 {
		out := slices.Clone(w.Clusters)
		r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out
	}
	return []string{w.Clusters[r.IntN(len(w.Clusters))]}
}

// Close ends the open windows at end and returns the jobs for the checker.
func (w *Workload) Close(end time.Time) []Job {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Job
	for _, n := range w.order {
		s := w.specs[n]
		if s.open {
			s.Windows[len(s.Windows)-1].To = end
		}
		out = append(out, s.Job) // after a failed change, its windows before it (Unchecked)
	}
	return out
}

// call sends a request to the schedulers in turn until one answers 2xx
// (503: no leader for now, a transport error: that one is down) or bound
// passes.
func (w *Workload) call(ctx context.Context, method, path string, body any, bound time.Duration) error {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(bound)
	var last error
	for time.Now().Before(deadline) {
		w.mu.Lock()
		base := w.APIs[w.next%len(w.APIs)]
		w.next++
		w.mu.Unlock()
		done, err := send(ctx, method, base+path, b)
		if done {
			return err
		}
		last = err
		if !sleep(ctx, 300*time.Millisecond) {
			return ctx.Err()
		}
	}
	return fmt.Errorf("soak: %w", last)
}

// send sends one request: done when it was answered 2xx (err nil) or a
// 4xx other than 429 (err says it: asking again would not change it);
// else err is why it should be asked again.
func send(ctx context.Context, method, url string, body []byte) (done bool, err error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return true, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return true, nil
	}
	err = fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, bytes.TrimSpace(out))
	return resp.StatusCode/100 == 4 && resp.StatusCode != http.StatusTooManyRequests, err
}
