package mesos

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// movingDetector is a Detector the test moves from one master to another (the ZooKeeper
// detector itself is tested against real ZooKeeper in engine/mesos/detector).
type movingDetector struct {
	mu     sync.Mutex
	leader string
	moved  chan struct{}
}

func newMovingDetector(leader string) *movingDetector {
	return &movingDetector{leader: leader, moved: make(chan struct{})}
}

func (d *movingDetector) Leader(context.Context) (string, <-chan struct{}, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.leader, d.moved, nil
}

func (d *movingDetector) move(leader string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.leader = leader
	close(d.moved)
	d.moved = make(chan struct{})
}

// TestLeaderChangeResubscribesToTheNewLeader: when the detector reports a new leader, the
// stream to the old one is dropped and the client subscribes to the new one with its id.
func TestLeaderChangeResubscribesToTheNewLeader(t *testing.T) {
	a, b := newFakeMaster(t), newFakeMaster(t)
	det := newMovingDetector(a.srv.URL)
	h := newRecHandler()
	c := startClient(t, a, Config{Detector: det}, h)

	sub := a.nextSub()
	sub.send(subscribedEvent("fw-1", 15))
	recv(t, h.subscribed, "Subscribed to a")
	if c.Master() != a.srv.URL {
		t.Fatalf("Master() = %q, want %q", c.Master(), a.srv.URL)
	}
	det.move(b.srv.URL)
	if err := recv(t, h.disconnected, "Disconnected"); !errors.Is(err, ErrLeaderMoved) {
		t.Fatalf("Disconnected(%v), want ErrLeaderMoved", err)
	}
	sub2 := b.nextSub()
	if got := sub2.call.GetSubscribe().GetFrameworkInfo().GetID().GetValue(); got != "fw-1" {
		t.Fatalf("SUBSCRIBE to the new leader with id %q, want fw-1", got)
	}
	sub2.send(subscribedEvent("fw-1", 15))
	recv(t, h.subscribed, "Subscribed to b")
	if err := c.Revive(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := b.nextCall(); got.streamID != sub2.streamID {
		t.Fatalf("call went to stream %q, want b's %q", got.streamID, sub2.streamID)
	}
	a.noCall()
	if c.Master() != b.srv.URL {
		t.Fatalf("Master() = %q, want %q", c.Master(), b.srv.URL)
	}
}

func TestDetectedURLMustBeHTTP(t *testing.T) {
	for _, u := range []string{"", "zk://h:2181/mesos", "not a url"} {
		if _, err := masterEndpoint(u); err == nil {
			t.Errorf("masterEndpoint(%q): want error", u)
		}
	}
}

// TestLeaderChangeCutsTheBackoffShort: a client waiting to retry a dead master retries at
// once when the detector names a new leader.
func TestLeaderChangeCutsTheBackoffShort(t *testing.T) {
	dead := newFakeMaster(t)
	dead.srv.Close() // connection refused
	b := newFakeMaster(t)
	det := newMovingDetector(dead.srv.URL)
	h := newRecHandler()
	c := New(Config{Detector: det, BackoffMin: time.Hour, BackoffMax: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, h) }()
	t.Cleanup(func() { cancel(); recv(t, done, "Run") })

	eventuallyMaster(t, c, dead.srv.URL) // the first attempt failed; the client now waits an hour
	det.move(b.srv.URL)
	b.nextSub().send(subscribedEvent("fw-1", 15))
	recv(t, h.subscribed, "Subscribed to the new leader")
}

// eventuallyMaster waits until the client has tried master u.
func eventuallyMaster(t *testing.T, c *Client, u string) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for c.Master() != u {
		if time.Now().After(deadline) {
			t.Fatalf("client never tried %s", u)
		}
		time.Sleep(time.Millisecond)
	}
}
