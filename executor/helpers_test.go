package executor

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/executor/fetch"
	"github.com/ejcloud/elasticjob/jobs"
)

// taskData is the payload the scheduler would put in TaskInfo.data.
func taskData(appURL, bootstrap string, item int, props map[string]string) []byte {
	return jobs.TaskData{
		Version: jobs.TaskDataVersion,
		ShardingContext: jobs.ShardingContext{
			JobName: "job", TaskID: "job@-@" + string(rune('0'+item)) + "@-@READY@-@agent-1@-@u",
			ShardingTotalCount: 2, ShardingItem: item, ShardingParameter: "Beijing", JobParameter: "p=1",
		},
		ExecutionSource: jobs.SourceNormal,
		Job:             jobs.Config{JobName: "job", AppName: "app", ShardingTotalCount: 2, Props: props},
		App:             app.Config{AppName: "app", AppURL: appURL, BootstrapScript: bootstrap, AppCacheEnable: true},
	}.Marshal()
}

// scriptURL writes an executable script and returns its file:// URL.
func scriptURL(t testing.TB, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return "file://" + p
}

type tarEnt struct {
	name, body string
	mode       int64
}

// tgzURL writes a tar.gz package and returns its file:// URL.
func tgzURL(t *testing.T, ents ...tarEnt) string {
	t.Helper()
	var buf bytes.Buffer
	z := gzip.NewWriter(&buf)
	tw := tar.NewWriter(z)
	for _, e := range ents {
		tw.WriteHeader(&tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(e.body)), Typeflag: tar.TypeReg})
		tw.Write([]byte(e.body))
	}
	tw.Close()
	z.Close()
	p := filepath.Join(t.TempDir(), "app.tar.gz")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return "file://" + p
}

func newPipeline(t testing.TB, env ...string) *Pipeline {
	sandbox := t.TempDir()
	return &Pipeline{
		Fetcher: &fetch.Fetcher{CacheDir: t.TempDir(), ScratchDir: filepath.Join(sandbox, "fetch"), Backoff: func(int) time.Duration { return time.Millisecond }},
		Sandbox: sandbox,
		Env:     append([]string{"PATH=" + os.Getenv("PATH")}, env...),
		Grace:   5 * time.Second,
		Log:     slog.New(slog.DiscardHandler),
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustApp(url, bootstrap string) app.Config {
	return app.Config{AppName: "app", AppURL: url, BootstrapScript: bootstrap, AppCacheEnable: true}
}
