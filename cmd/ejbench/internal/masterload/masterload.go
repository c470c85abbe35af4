// Package masterload is the cluster-sim scenario's master ceiling: a
// minimal Mesos v1 framework that drives a (simulated) master as hard as it
// can, so its steady launch rate is the master's own ceiling, with no
// scheduler in the way.
package masterload

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/recordio"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// Load is a minimal framework that launches on every offer as many
// small tasks as fit (up to TasksPerAccept, at most InFlight
// unfinished) and acknowledges every update from a pool of workers: it
// drives the master harder than the scheduler can, so its steady rate is
// the master's ceiling on this machine.
type Load struct {
	url      string
	hc       *http.Client
	fwID     string
	streamID string
	offers   chan mesos.Offer
	acks     chan mesos.TaskStatus
	seq      atomic.Int64
	Launched atomic.Int64 // tasks launched
	Ended    atomic.Int64 // tasks in a terminal state
	Errs     atomic.Int64 // calls that failed
	mu       sync.Mutex
	firstErr error
}

// The load's shape.
const (
	InFlight       = 30_000 // tasks launched and not ended: launching waits above it
	TasksPerAccept = 16
	loadTaskCPUs   = 0.1
	loadTaskMemMB  = 64
	loadApps       = 10
)

// Run subscribes to url, drives it for d and returns the load's
// counters; mark is called after warm. It tears its framework down at the
// end.
func Run(ctx context.Context, url string, d time.Duration, mark func(*Load), warm time.Duration) (*Load, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: 32, DisableCompression: true}
	l := &Load{url: url + "/api/v1/scheduler", hc: &http.Client{Transport: tr},
		offers: make(chan mesos.Offer, 100_000), acks: make(chan mesos.TaskStatus, 1_000_000)}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	body, err := l.subscribe(ctx)
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { l.acceptLoop(ctx) })
	}
	for range 8 {
		wg.Go(func() { l.ackLoop(ctx) })
	}
	wg.Go(func() {
		select {
		case <-ctx.Done():
		case <-time.After(warm):
			mark(l)
		}
	})
	l.read(body) // until ctx ends (the body is closed with it)
	wg.Wait()
	_ = l.call(context.Background(), &scheduler.Call{Type: scheduler.Call_TEARDOWN})
	tr.CloseIdleConnections()
	return l, nil
}

func (l *Load) subscribe(ctx context.Context) (io.ReadCloser, error) {
	fo := 0.0
	info := mesos.FrameworkInfo{User: "ejbench", Name: "ejbench-master-load", FailoverTimeout: &fo}
	b, _ := json.Marshal(&scheduler.Call{Type: scheduler.Call_SUBSCRIBE, Subscribe: &scheduler.Call_Subscribe{FrameworkInfo: &info}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, l.url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := l.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("subscribe: %s", resp.Status)
	}
	l.streamID = resp.Header.Get("Mesos-Stream-Id")
	return resp.Body, nil
}

// read dispatches the stream's events until it ends.
func (l *Load) read(body io.ReadCloser) {
	defer body.Close()
	r := recordio.NewReader(body, recordio.MaxMessageSize(64<<20))
	for {
		b, err := r.ReadFrame()
		if err != nil {
			return
		}
		var ev scheduler.Event
		if err := json.Unmarshal(b, &ev); err != nil {
			l.fail(err)
			return
		}
		switch ev.Type {
		case scheduler.Event_SUBSCRIBED:
			l.fwID = ev.Subscribed.FrameworkID.Value
		case scheduler.Event_OFFERS:
			for _, o := range ev.Offers.Offers {
				l.offers <- o
			}
		case scheduler.Event_UPDATE:
			st := ev.Update.Status
			if isTerminalState(st.GetState()) {
				l.Ended.Add(1)
			}
			if len(st.UUID) > 0 {
				l.acks <- st
			}
		}
	}
}

func isTerminalState(s mesos.TaskState) bool {
	switch s {
	case mesos.TASK_FINISHED, mesos.TASK_FAILED, mesos.TASK_KILLED, mesos.TASK_LOST, mesos.TASK_ERROR, mesos.TASK_DROPPED, mesos.TASK_GONE:
		return true
	}
	return false
}

func (l *Load) acceptLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case o := <-l.offers:
			for l.Launched.Load()-l.Ended.Load() >= InFlight && ctx.Err() == nil {
				time.Sleep(5 * time.Millisecond) // launches follow completions
			}
			if err := l.accept(ctx, o); err != nil && ctx.Err() == nil {
				l.fail(err)
			}
		}
	}
}

// accept launches what fits of TasksPerAccept tasks on the offer, each
// with the executor of one of loadApps apps (charged once per agent).
func (l *Load) accept(ctx context.Context, o mesos.Offer) error {
	cpus, mem := scalar(o.Resources, "cpus"), scalar(o.Resources, "mem")
	running := map[string]bool{}
	for _, id := range o.ExecutorIDs {
		running[id.Value] = true
	}
	var tasks []mesos.TaskInfo
	refuse := 0.0
	for range TasksPerAccept {
		n := l.seq.Add(1)
		exec := fmt.Sprintf("load-app-%d@-@%s", n%loadApps, o.AgentID.Value)
		needC, needM := loadTaskCPUs, float64(loadTaskMemMB)
		if !running[exec] {
			needC, needM = needC+0.1, needM+32
		}
		if needC > cpus+1e-9 || needM > mem {
			break
		}
		cpus, mem = cpus-needC, mem-needM
		running[exec] = true
		cmd := "/bin/true"
		tasks = append(tasks, mesos.TaskInfo{Name: "load", TaskID: mesos.TaskID{Value: fmt.Sprintf("load-%d", n)}, AgentID: o.AgentID,
			Resources: []mesos.Resource{res("cpus", loadTaskCPUs), res("mem", loadTaskMemMB)},
			Executor: &mesos.ExecutorInfo{ExecutorID: mesos.ExecutorID{Value: exec}, Command: &mesos.CommandInfo{Value: &cmd},
				Resources: []mesos.Resource{res("cpus", 0.1), res("mem", 32)}}})
	}
	call := &scheduler.Call{Type: scheduler.Call_ACCEPT, Accept: &scheduler.Call_Accept{OfferIDs: []mesos.OfferID{o.ID},
		Operations: []mesos.Offer_Operation{{Type: mesos.Offer_Operation_LAUNCH, Launch: &mesos.Offer_Operation_Launch{TaskInfos: tasks}}},
		Filters:    &mesos.Filters{RefuseSeconds: &refuse}}}
	if len(tasks) == 0 {
		refuse = 1
		call = &scheduler.Call{Type: scheduler.Call_DECLINE, Decline: &scheduler.Call_Decline{OfferIDs: []mesos.OfferID{o.ID},
			Filters: &mesos.Filters{RefuseSeconds: &refuse}}}
	}
	if err := l.call(ctx, call); err != nil {
		return err
	}
	l.Launched.Add(int64(len(tasks)))
	return nil
}

func (l *Load) ackLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case st := <-l.acks:
			err := l.call(ctx, &scheduler.Call{Type: scheduler.Call_ACKNOWLEDGE, Acknowledge: &scheduler.Call_Acknowledge{
				AgentID: *st.AgentID, TaskID: st.TaskID, UUID: st.UUID}})
			if err != nil && ctx.Err() == nil {
				l.fail(err)
			}
		}
	}
}

func (l *Load) call(ctx context.Context, call *scheduler.Call) error {
	call.FrameworkID = &mesos.FrameworkID{Value: l.fwID}
	b, _ := json.Marshal(call)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, l.url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Mesos-Stream-Id", l.streamID)
	resp, err := l.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("%s: %s %s", call.Type, resp.Status, msg)
	}
	return nil
}

// FirstErr is the first call error, nil if none.
func (l *Load) FirstErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.firstErr
}

func (l *Load) fail(err error) {
	l.Errs.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.firstErr == nil {
		l.firstErr = err
	}
}

func res(name string, v float64) mesos.Resource {
	return mesos.Resource{Name: name, Type: mesos.SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: v}}
}

func scalar(rs []mesos.Resource, name string) float64 {
	var v float64
	for _, r := range rs {
		if r.Name == name {
			v += r.GetScalar().GetValue()
		}
	}
	return v
}
