package embedded

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/encoding"
	"github.com/mesos/mesos-go/api/v1/lib/encoding/codecs"
	"github.com/mesos/mesos-go/api/v1/lib/httpcli"
	"github.com/mesos/mesos-go/api/v1/lib/httpcli/httpsched"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler/calls"
)

// TestMesosGoSchedulerClient drives the cluster with mesos-go's own HTTP
// scheduler client, for both codecs.
func TestMesosGoSchedulerClient(t *testing.T) {
	for _, mt := range []string{typeJSON, typeProtobuf} {
		t.Run(mt, func(t *testing.T) {
			c := newCluster(t, nil)
			cli := httpcli.New(httpcli.Endpoint(c.URL()+"/api/v1/scheduler"),
				httpcli.Codec(codecs.ByMediaType[codecsType(mt)]))
			caller := httpsched.NewCaller(cli)
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			resp, err := caller.Call(ctx, calls.Subscribe(&mesos.FrameworkInfo{User: "u", Name: "mesos-go"}))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Close()
			var ev scheduler.Event
			if err := resp.Decode(&ev); err != nil || ev.Type != scheduler.Event_SUBSCRIBED {
				t.Fatalf("first event %v: %v", ev.Type, err)
			}
			fwID := ev.Subscribed.FrameworkID.Value
			if err := resp.Decode(&ev); err != nil || ev.Type != scheduler.Event_OFFERS {
				t.Fatalf("second event %v: %v", ev.Type, err)
			}
			decline := calls.Decline(ev.Offers.Offers[0].ID).With(calls.Framework(fwID), calls.RefuseSeconds(time.Hour))
			dresp, err := caller.Call(ctx, decline)
			if err != nil {
				t.Fatal(err)
			}
			if dresp != nil {
				dresp.Close()
			}
		})
	}
}

func codecsType(mt string) encoding.MediaType { return encoding.MediaType(mt) }

func TestFetchURIs(t *testing.T) {
	src := filepath.Join(t.TempDir(), "tool.sh")
	if err := os.WriteFile(src, []byte("#!/bin/sh\necho hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/pkg/app.tar.gz" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("archive"))
	}))
	defer srv.Close()
	dir := t.TempDir()
	exe := true
	uris := []mesos.CommandInfo_URI{
		{Value: "file://" + src, Executable: &exe},
		{Value: srv.URL + "/pkg/app.tar.gz"},
	}
	for _, u := range uris {
		if err := fetchURI(u, dir); err != nil {
			t.Fatalf("%s: %v", u.Value, err)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "tool.sh")); err != nil || st.Mode().Perm()&0o100 == 0 {
		t.Fatalf("tool.sh: %v %v", st, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "app.tar.gz")); err != nil || string(b) != "archive" {
		t.Fatalf("app.tar.gz: %q %v", b, err)
	}
	if err := fetchURI(mesos.CommandInfo_URI{Value: srv.URL + "/missing"}, dir); err == nil {
		t.Fatal("404 fetched")
	}
}
