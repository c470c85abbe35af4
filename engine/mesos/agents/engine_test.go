package agents

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path"
	"strconv"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/engine/mesos"
	"github.com/ejcloud/elasticjob/jobs"
)

// fakeMesos is a master with one active agent S0 (and an inactive S1) whose /state lists
// two runs of app a's executor (the first completed) and one of app b's, and whose
// /files/read serves files.
func fakeMesos(t *testing.T, files map[string]string) *httptest.Server {
	t.Helper()
	return fakeMesosModes(t, files, nil)
}

// fakeMesosModes is fakeMesos whose /files/browse lists the files with the modes given
// ("-rw-r--r--" for the others; a mode "prw-r--r--2" means 2 links).
func fakeMesosModes(t *testing.T, files, modes map[string]string) *httptest.Server {
	t.Helper()
	return fakeMesosState(t, `{"flags":{"isolation":"posix/cpu"},"frameworks":[{"id":"F","executors":[`+
		`{"id":"a@-@S0@-@2","directory":"/sb/a2"},{"id":"b@-@S0@-@1","directory":"/sb/b1"}],`+
		`"completed_executors":[{"id":"a@-@S0@-@1","directory":"/sb/a1"}]}]}`, files, modes)
}

// fakeMesosState is fakeMesosModes whose agent answers state as its /state.
func fakeMesosState(t *testing.T, state string, files, modes map[string]string) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := strings.TrimPrefix(srv.URL, "http://")
		switch r.URL.Path {
		case "/slaves":
			_, _ = w.Write([]byte(`{"slaves":[{"id":"S0","hostname":"h0","pid":"slave(1)@` + host + `","active":true,"resources":{"cpus":4,"mem":2048}},` +
				`{"id":"S1","hostname":"h1","pid":"slave(1)@` + host + `","active":false,"resources":{"cpus":64,"mem":65536}}]}`))
		case "/state":
			_, _ = w.Write([]byte(state))
		case "/files/browse":
			dir, ls := r.URL.Query().Get("path"), []map[string]any{}
			for p := range files {
				if path.Dir(p) == dir {
					mode, nlink := "-rw-r--r--", 1
					if m, ok := modes[p]; ok {
						mode = m[:10]
						if len(m) > 10 {
							nlink, _ = strconv.Atoi(m[10:])
						}
					}
					ls = append(ls, map[string]any{"path": p, "mode": mode, "nlink": nlink, "size": len(files[p]), "mtime": 1.5})
				}
			}
			if len(ls) == 0 {
				http.NotFound(w, r)
				return
			}
			_ = json.NewEncoder(w).Encode(ls)
		case "/files/read":
			data, ok := files[r.URL.Query().Get("path")]
			if !ok {
				http.NotFound(w, r)
				return
			}
			off, _ := strconv.Atoi(r.URL.Query().Get("offset"))
			if off < 0 { // the size
				_ = json.NewEncoder(w).Encode(map[string]any{"data": "", "offset": len(data)})
				return
			}
			end := len(data)
			if l, err := strconv.Atoi(r.URL.Query().Get("length")); err == nil && l >= 0 {
				end = min(off+l, len(data))
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"data": data[min(off, len(data)):end], "offset": off})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestEngineDeclaresCheckpointingAsConfigured(t *testing.T) {
	for _, ck := range []bool{true, false} {
		c := (&Engine{Checkpoint: ck}).Capabilities()
		want := engine.Capabilities{Checkpointing: ck, ExecutorSharing: true, Logs: true, Sandboxes: true, ClusterView: true, Capacity: true, Accepts: 8}
		if c != want {
			t.Fatalf("checkpoint %v: %+v, want %+v", ck, c, want)
		}
		// One value per engine: the term's Driver declares the same.
		if d := mesos.New(mesos.Config{NoCheckpoint: !ck}).Capabilities(); d != c {
			t.Fatalf("checkpoint %v: the client declares %+v, the API side %+v", ck, d, c)
		}
	}
}

func TestEngineAgentsAreTheActiveOnesWithTheirTotals(t *testing.T) {
	e := &Engine{Client: New(fakeMesos(t, nil).URL)}
	ags, err := e.Agents(t.Context())
	if err != nil || len(ags) != 1 || ags[0] != (engine.Agent{ID: "S0", Hostname: "h0", CPUs: 4, MemMB: 2048}) {
		t.Fatalf("agents %+v, %v", ags, err)
	}
}

func TestEngineSandboxesAreTheAppsLiveExecutors(t *testing.T) {
	e := &Engine{Client: New(fakeMesos(t, nil).URL)}
	boxes, err := e.Sandboxes(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	// S1 is listed by the master too (inactive agents keep their sandboxes): both answer
	// from the one fake agent, so a@-@S0@-@2 appears once per agent.
	for _, b := range boxes {
		if b.ExecutorID != "a@-@S0@-@2" || b.Path != "/sb/a2" {
			t.Fatalf("sandboxes of a: %+v (only the live executor of app a)", boxes)
		}
	}
	if len(boxes) == 0 {
		t.Fatal("no sandbox of app a")
	}
	if boxes, err := e.Sandboxes(t.Context(), "none"); err != nil || boxes == nil || len(boxes) != 0 {
		t.Fatalf("an app without executors: %+v, %v (want an empty list)", boxes, err)
	}
}

func TestEngineTaskLogReadsTheNewestExecutorRunThatHasIt(t *testing.T) {
	tid := jobs.TaskID{JobName: "j", Item: 0, Kind: jobs.KindReady, AgentID: "S0", UUID: "u"}.String()
	old := jobs.TaskID{JobName: "j", Item: 1, Kind: jobs.KindReady, AgentID: "S0", UUID: "v"}.String()
	srv := fakeMesos(t, map[string]string{
		"/sb/a2/tasks/" + tid + "/stdout": "hello world\n",
		"/sb/a1/tasks/" + old + "/stderr": "an older run's\n",
	})
	e := &Engine{Client: New(srv.URL), ExecutorApp: func(_ context.Context, job string) (string, bool) { return "a", job == "j" }}
	c, err := e.TaskLog(t.Context(), tid, "stdout", 0, 5)
	if err != nil || c != (engine.LogChunk{Offset: 0, Size: 12, Data: "hello"}) {
		t.Fatalf("head: %+v, %v", c, err)
	}
	if c, err = e.TaskLog(t.Context(), tid, "stdout", -6, 6); err != nil || c != (engine.LogChunk{Offset: 6, Size: 12, Data: "world\n"}) {
		t.Fatalf("tail: %+v, %v", c, err)
	}
	if c, err = e.TaskLog(t.Context(), old, "stderr", 0, -1); err != nil || c.Data != "an older run's\n" {
		t.Fatalf("a completed run's log: %+v, %v", c, err)
	}
	if _, err := e.TaskLog(t.Context(), tid, "stderr", 0, 10); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("a missing stream: %v, want ErrNotFound", err)
	}
	gone := jobs.TaskID{JobName: "j", Item: 0, Kind: jobs.KindReady, AgentID: "S9", UUID: "u"}.String()
	if _, err := e.TaskLog(t.Context(), gone, "stdout", 0, 10); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("an agent that left: %v, want ErrNotFound", err)
	}
	if _, err := e.TaskLog(t.Context(), "not a task id", "stdout", 0, 10); !errors.Is(err, engine.ErrInvalid) {
		t.Fatalf("a bad task id: %v, want ErrInvalid", err)
	}
}

// A task's files: listed beneath its directory, read by relative path;
// a path that is not clean and relative is refused before the agent is
// asked (path.Join would clean "..", naming another task's or run's file).
func TestEngineTaskFilesListsAndReadsBeneathTheTask(t *testing.T) {
	const report = "work/report.txt"
	tid := jobs.TaskID{JobName: "j", Item: 0, Kind: jobs.KindReady, AgentID: "S0", UUID: "u"}.String()
	other := jobs.TaskID{JobName: "j", Item: 1, Kind: jobs.KindReady, AgentID: "S0", UUID: "v"}.String()
	srv := fakeMesos(t, map[string]string{
		"/sb/a2/tasks/" + tid + "/" + report:   "shard 0\n",
		"/sb/a2/tasks/" + other + "/" + report: "shard 1's\n",
	})
	e := &Engine{Client: New(srv.URL), ExecutorApp: func(_ context.Context, job string) (string, bool) { return "a", job == "j" }}
	files, err := e.TaskFiles(t.Context(), tid, "work")
	if err != nil || len(files) != 1 || files[0].Path != "work/report.txt" || files[0].Size != 8 || files[0].MTime.UnixMilli() != 1500 {
		t.Fatalf("work/: %+v, %v", files, err)
	}
	if c, err := e.TaskLog(t.Context(), tid, "work/report.txt", 0, -1); err != nil || c.Data != "shard 0\n" {
		t.Fatalf("read: %+v, %v", c, err)
	}
	for _, bad := range []string{"../" + other + "/" + report, "/etc/passwd", "work/../../" + other + "/" + report, "."} {
		if c, err := e.TaskLog(t.Context(), tid, bad, 0, -1); !errors.Is(err, engine.ErrInvalid) {
			t.Errorf("read %q: %+v, %v; want ErrInvalid", bad, c, err)
		}
	}
	if _, err := e.TaskFiles(t.Context(), tid, "../"+other+"/work"); !errors.Is(err, engine.ErrInvalid) {
		t.Errorf("list another task's directory: %v; want ErrInvalid", err)
	}
}

func TestEngineClusterViewNamesTheMasterAndAgentsOrWhyNot(t *testing.T) {
	srv := fakeMesos(t, nil)
	e := &Engine{Client: New(srv.URL), URL: srv.URL, Embedded: true}
	v := e.ClusterView(t.Context())
	ags, _ := v.Agents.([]Agent)
	if v.Name != "mesos" || v.AgentsError != "" || len(ags) != 2 || ags[0].Isolation == nil ||
		v.Detail != (MasterView{URL: srv.URL, Embedded: true, Master: srv.URL}) {
		t.Fatalf("view %+v", v)
	}
	srv.Close()
	e.Client.MaxAge = 0
	v = e.ClusterView(t.Context())
	if ags, _ := v.Agents.([]Agent); v.AgentsError == "" || ags == nil || len(ags) != 0 {
		t.Fatalf("master gone: %+v (want an empty list and the error)", v)
	}
}

// A fire's task id names no agent: its log is looked for on every agent.
func TestEngineTaskLogOfAFireIDSearchesTheAgents(t *testing.T) {
	tid := jobs.TaskID{JobName: "j", Item: 0, Kind: jobs.KindReady, UUID: "w"}.String()
	srv := fakeMesos(t, map[string]string{"/sb/a2/tasks/" + tid + "/stdout": "found\n"})
	e := &Engine{Client: New(srv.URL), ExecutorApp: func(_ context.Context, job string) (string, bool) { return "a", job == "j" }}
	if c, err := e.TaskLog(t.Context(), tid, "stdout", 0, -1); err != nil || c.Data != "found\n" {
		t.Fatalf("log of a fire's task: %+v, %v", c, err)
	}
	if _, err := e.TaskLog(t.Context(), tid, "stderr", 0, 10); !errors.Is(err, engine.ErrNotFound) || !strings.Contains(err.Error(), "on any agent") {
		t.Fatalf("a missing stream: %v, want ErrNotFound on any agent", err)
	}
}

// A real agent reads as root and opens a FIFO blocking (its /files process then answers no
// read for anyone): a task's log that is a FIFO, a device or a link to one, or a hard link,
// is refused before the agent is asked to read it; a regular one reads as before. The
// embedded agent guards its own reads and is not asked for a listing.
func TestEngineTaskLogRefusesWhatIsNotARegularFile(t *testing.T) {
	id := func(item int) string {
		return jobs.TaskID{JobName: "j", Item: item, Kind: jobs.KindReady, AgentID: "S0", UUID: "u"}.String()
	}
	files := map[string]string{}
	modes := map[string]string{}
	for i, mode := range []string{"-rw-r--r--", "prw-r--r--", "crw-rw-rw-", "drwxr-xr-x", "-rw-r--r--2"} {
		p := "/sb/a2/tasks/" + id(i) + "/stdout"
		files[p], modes[p] = "line "+strconv.Itoa(i)+"\n", mode
	}
	srv := fakeMesosModes(t, files, modes)
	e := &Engine{Client: New(srv.URL), ExecutorApp: func(_ context.Context, job string) (string, bool) { return "a", job == "j" }}
	if c, err := e.TaskLog(t.Context(), id(0), "stdout", 0, 100); err != nil || c.Data != "line 0\n" {
		t.Fatalf("a regular log: %+v, %v", c, err)
	}
	for i := 1; i <= 4; i++ {
		c, err := e.TaskLog(t.Context(), id(i), "stdout", 0, 100)
		if !errors.Is(err, engine.ErrNotFound) || !strings.Contains(err.Error(), "regular file") || c.Data != "" {
			t.Errorf("mode %s: %+v, %v; want refused as not a regular file", modes["/sb/a2/tasks/"+id(i)+"/stdout"], c, err)
		}
	}
	e.Embedded = true
	if c, err := e.TaskLog(t.Context(), id(1), "stdout", 0, 100); err != nil || c.Data != "line 1\n" {
		t.Errorf("the embedded agent's own read: %+v, %v", c, err)
	}
}

// Every sandbox of an agent is a team's to write. A task's log is looked for only in its
// own namespace's executor runs: search plants tasks/<pay's task id>/stdout in its own,
// newer sandbox, and pay's log (its job deleted since, so no app names the executor; or
// the default namespace's job) is its own or not found, never search's.
func TestHostileTaskLogIsReadInItsNamespaceAlone(t *testing.T) {
	pay := jobs.TaskID{JobName: "pay~nightly", Item: 0, Kind: jobs.KindReady, AgentID: "S0", UUID: "u"}.String()
	def := jobs.TaskID{JobName: "nightly", Item: 0, Kind: jobs.KindReady, AgentID: "S0", UUID: "v"}.String()
	gone := jobs.TaskID{JobName: "pay~gone", Item: 0, Kind: jobs.KindReady, AgentID: "S0", UUID: "w"}.String()
	httpTask := jobs.TaskID{JobName: "pay~ping", Item: 0, Kind: jobs.KindReady, AgentID: "S0", UUID: "x"}.String()
	state := `{"frameworks":[{"id":"F","executors":[` +
		`{"id":"elasticjob-http@-@S0","directory":"/sb/http"}],` +
		`"completed_executors":[{"id":"etl@-@S0","directory":"/sb/def"},{"id":"pay~etl@-@S0","directory":"/sb/pay"},` +
		`{"id":"search~x@-@S0","directory":"/sb/search"}]}]}`
	srv := fakeMesosState(t, state, map[string]string{
		"/sb/pay/tasks/" + pay + "/stdout":         "pay's own\n",
		"/sb/def/tasks/" + def + "/stdout":         "default's own\n",
		"/sb/http/tasks/" + httpTask + "/stdout":   "pay's HTTP run before its own executor\n",
		"/sb/search/tasks/" + pay + "/stdout":      "FORGED by search\n",
		"/sb/search/tasks/" + def + "/stdout":      "FORGED by search\n",
		"/sb/search/tasks/" + gone + "/stdout":     "FORGED by search\n",
		"/sb/search/tasks/" + httpTask + "/stdout": "FORGED by search\n",
	}, nil)
	known := map[string]string{"pay~ping": jobs.HTTPApp("pay")}
	e := &Engine{Client: New(srv.URL), ExecutorApp: func(_ context.Context, job string) (string, bool) {
		a, ok := known[job]
		return a, ok
	}}
	for _, c := range []struct{ id, want string }{{pay, "pay's own\n"}, {def, "default's own\n"},
		{httpTask, "pay's HTTP run before its own executor\n"}, {gone, ""}} {
		got, err := e.TaskLog(t.Context(), c.id, "stdout", 0, -1)
		if c.want == "" {
			if !errors.Is(err, engine.ErrNotFound) {
				t.Errorf("%s: %+v, %v; want not found", c.id, got, err)
			}
			continue
		}
		if err != nil || got.Data != c.want {
			t.Errorf("%s: %+v, %v; want %q", c.id, got, err, c.want)
		}
		files, err := e.TaskFiles(t.Context(), c.id, "")
		if err != nil || len(files) != 1 || files[0].Size != int64(len(c.want)) {
			t.Errorf("%s's files: %+v, %v; want its own stdout", c.id, files, err)
		}
	}
}
