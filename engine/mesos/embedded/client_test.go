package embedded

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/recordio"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// deadline bounds every wait for an event; generous because executors are
// real child processes.
const deadline = 30 * time.Second

func newCluster(t *testing.T, mutate func(*Config)) *Cluster {
	t.Helper()
	cfg := Config{
		WorkDir:           t.TempDir(),
		CPUs:              4,
		MemMB:             4096,
		DiskMB:            1000,
		Ports:             "[31000-31009]",
		Hostname:          "test-host",
		HeartbeatInterval: time.Hour,
		Logger:            slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return c
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// sched is a minimal v1 scheduler client: one SUBSCRIBE stream read by a
// goroutine into a channel, and calls with the Mesos-Stream-Id header.
type sched struct {
	t        *testing.T
	url      string
	fwID     string
	streamID string
	user     string // HTTP Basic credential sent with every request ("" and "": none)
	pass     string
	header   http.Header
	events   chan *scheduler.Event
	offers   []mesos.Offer // offers seen while waiting for other events
	cancel   context.CancelFunc
}

func subscribe(t *testing.T, c *Cluster, info mesos.FrameworkInfo) *sched {
	t.Helper()
	s, status := trySubscribe(t, c.URL(), info)
	if status != http.StatusOK {
		t.Fatalf("subscribe: status %d", status)
	}
	return s
}

func trySubscribe(t *testing.T, url string, info mesos.FrameworkInfo) (*sched, int) {
	t.Helper()
	return trySubscribeAs(t, url, info, "", "")
}

// trySubscribeAs subscribes with an HTTP Basic credential (none when pass is "").
func trySubscribeAs(t *testing.T, url string, info mesos.FrameworkInfo, user, pass string) (*sched, int) {
	t.Helper()
	body, _ := json.Marshal(&scheduler.Call{Type: scheduler.Call_SUBSCRIBE, FrameworkID: info.ID,
		Subscribe: &scheduler.Call_Subscribe{FrameworkInfo: &info}})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/api/v1/scheduler", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if pass != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		return nil, resp.StatusCode
	}
	s := &sched{t: t, url: url, user: user, pass: pass, header: resp.Header, streamID: resp.Header.Get("Mesos-Stream-Id"),
		events: make(chan *scheduler.Event, 1000), cancel: cancel}
	go s.read(resp.Body)
	t.Cleanup(s.close)
	ev := s.next(scheduler.Event_SUBSCRIBED)
	s.fwID = ev.Subscribed.FrameworkID.Value
	return s, resp.StatusCode
}

func (s *sched) read(body io.ReadCloser) {
	defer close(s.events)
	defer body.Close()
	r := recordio.NewReader(body)
	for {
		b, err := r.ReadFrame()
		if err != nil {
			return
		}
		var ev scheduler.Event
		if err := json.Unmarshal(b, &ev); err != nil {
			s.t.Errorf("decode event: %v", err)
			return
		}
		s.events <- &ev
	}
}

func (s *sched) close() { s.cancel() }

// next returns the next event of type want, discarding others.
func (s *sched) next(want scheduler.Event_Type) *scheduler.Event {
	s.t.Helper()
	timer := time.NewTimer(deadline)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				s.t.Fatalf("stream closed while waiting for %s", want)
			}
			if ev.Type == want {
				return ev
			}
			s.keep(ev)
		case <-timer.C:
			s.t.Fatalf("timed out waiting for %s", want)
		}
	}
}

// nextNot returns the next event that is neither a HEARTBEAT nor an OFFERS.
func (s *sched) nextNot(skip ...scheduler.Event_Type) *scheduler.Event {
	s.t.Helper()
	timer := time.NewTimer(deadline)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				s.t.Fatal("stream closed")
			}
			if !containsType(skip, ev.Type) {
				return ev
			}
			s.keep(ev)
		case <-timer.C:
			s.t.Fatal("timed out waiting for an event")
		}
	}
}

// keep remembers offers skipped by next so tests can still use them.
func (s *sched) keep(ev *scheduler.Event) {
	switch ev.Type {
	case scheduler.Event_OFFERS:
		s.offers = append(s.offers, ev.Offers.Offers...)
	case scheduler.Event_RESCIND:
		for i, o := range s.offers {
			if o.ID == ev.Rescind.OfferID {
				s.offers = append(s.offers[:i], s.offers[i+1:]...)
				break
			}
		}
	}
}

func containsType(ts []scheduler.Event_Type, t scheduler.Event_Type) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

// call posts a non-SUBSCRIBE call and returns the status and body.
func (s *sched) call(call *scheduler.Call) (int, string) {
	s.t.Helper()
	call.FrameworkID = &mesos.FrameworkID{Value: s.fwID}
	body, _ := json.Marshal(call)
	req, _ := http.NewRequest(http.MethodPost, s.url+"/api/v1/scheduler", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Mesos-Stream-Id", s.streamID)
	if s.pass != "" {
		req.SetBasicAuth(s.user, s.pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (s *sched) mustCall(call *scheduler.Call) {
	s.t.Helper()
	if code, body := s.call(call); code != http.StatusAccepted {
		s.t.Fatalf("%s: %d %s", call.Type, code, body)
	}
}

// barrier reconciles a made-up task and returns every event queued before
// its answer: events are delivered in order, so anything the calls before
// it produced has arrived by then.
func (s *sched) barrier() []*scheduler.Event {
	s.t.Helper()
	id := "barrier-" + newUUID()
	s.mustCall(&scheduler.Call{Type: scheduler.Call_RECONCILE, Reconcile: &scheduler.Call_Reconcile{
		Tasks: []scheduler.Call_Reconcile_Task{{TaskID: mesos.TaskID{Value: id}}}}})
	var before []*scheduler.Event
	for {
		ev := s.nextNot(scheduler.Event_HEARTBEAT)
		if ev.Type == scheduler.Event_UPDATE && ev.Update.Status.TaskID.Value == id {
			return before
		}
		before = append(before, ev)
	}
}

func (s *sched) ack(st mesos.TaskStatus) {
	s.t.Helper()
	s.mustCall(&scheduler.Call{Type: scheduler.Call_ACKNOWLEDGE, Acknowledge: &scheduler.Call_Acknowledge{
		AgentID: *st.AgentID, TaskID: st.TaskID, UUID: st.UUID}})
}

// update waits for the next UPDATE of the task.
func (s *sched) update(taskID string) mesos.TaskStatus {
	s.t.Helper()
	for {
		ev := s.next(scheduler.Event_UPDATE)
		if ev.Update.Status.TaskID.Value == taskID {
			return ev.Update.Status
		}
	}
}

func (s *sched) decline(o mesos.Offer, refuse float64) {
	s.t.Helper()
	s.mustCall(&scheduler.Call{Type: scheduler.Call_DECLINE, Decline: &scheduler.Call_Decline{
		OfferIDs: []mesos.OfferID{o.ID}, Filters: &mesos.Filters{RefuseSeconds: &refuse}}})
}

// offer returns the oldest offer not yet used, waiting for one if needed.
func (s *sched) offer() mesos.Offer {
	s.t.Helper()
	if len(s.offers) > 0 {
		o := s.offers[0]
		s.offers = s.offers[1:]
		return o
	}
	return s.next(scheduler.Event_OFFERS).Offers.Offers[0]
}

// freshOffer declines every held offer without a filter and returns the
// next offer, which then holds the whole free pool.
func (s *sched) freshOffer() mesos.Offer {
	s.t.Helper()
	for len(s.offers) > 0 {
		s.decline(s.offer(), 0)
	}
	return s.offer()
}

func frameworkInfo(caps ...mesos.FrameworkInfo_Capability_Type) mesos.FrameworkInfo {
	info := mesos.FrameworkInfo{User: "test", Name: "test-framework"}
	for _, c := range caps {
		info.Capabilities = append(info.Capabilities, mesos.FrameworkInfo_Capability{Type: c})
	}
	return info
}

// execInfo re-executes this test binary as an executor in the given mode.
func execInfo(t *testing.T, id, mode string, cpus, mem float64) *mesos.ExecutorInfo {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	shell := false
	return &mesos.ExecutorInfo{
		ExecutorID: mesos.ExecutorID{Value: id},
		Command: &mesos.CommandInfo{
			Shell: &shell, Value: &exe, Arguments: []string{filepath.Base(exe)},
			Environment: &mesos.Environment{Variables: []mesos.Environment_Variable{
				{Name: envMode, Value: &mode}, {Name: "CUSTOM_VAR", Value: strPtr("custom")},
			}},
		},
		Resources: []mesos.Resource{scalar("cpus", cpus), scalar("mem", mem)},
	}
}

func taskInfo(c *Cluster, id, data string, ex *mesos.ExecutorInfo, cpus, mem float64) mesos.TaskInfo {
	return mesos.TaskInfo{
		Name: id, TaskID: mesos.TaskID{Value: id}, AgentID: mesos.AgentID{Value: c.AgentID()},
		Executor: ex, Data: []byte(data),
		Resources: []mesos.Resource{scalar("cpus", cpus), scalar("mem", mem)},
	}
}

func (s *sched) launch(o mesos.Offer, tasks ...mesos.TaskInfo) {
	s.t.Helper()
	refuse := 0.0
	s.mustCall(&scheduler.Call{Type: scheduler.Call_ACCEPT, Accept: &scheduler.Call_Accept{
		OfferIDs: []mesos.OfferID{o.ID},
		Operations: []mesos.Offer_Operation{{Type: mesos.Offer_Operation_LAUNCH,
			Launch: &mesos.Offer_Operation_Launch{TaskInfos: tasks}}},
		Filters: &mesos.Filters{RefuseSeconds: &refuse},
	}})
}

// eventually polls cond (for effects of real child processes only).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func scalarOf(rs []mesos.Resource, name string) float64 {
	var v float64
	for _, r := range rs {
		if r.Name == name {
			v += r.GetScalar().GetValue()
		}
	}
	return v
}
