package webhook

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
)

func TestDeadlineBodies(t *testing.T) {
	a := observe.DeadlineAlert{Kind: observe.DeadlineRun, Namespace: "team-a", Job: "etl", TaskID: "t1",
		Since: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Due: time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC), Message: "still running"}
	for format, want := range map[string]string{
		"":         `"event":"DEADLINE_MISSED","kind":"run","namespace":"team-a","jobName":"etl","taskId":"t1"`,
		"dingtalk": `{"msgtype":"text","text":{"content":"[ElasticJob] deadline missed (run): team-a/etl: still running"}}`,
		"wechat":   `"msgtype":"text"`,
		"slack":    `{"text":"[ElasticJob] deadline missed (run): team-a/etl: still running"}`,
		"feishu":   `{"content":{"text":"[ElasticJob] deadline missed (run): team-a/etl: still running"},"msg_type":"text"}`,
	} {
		b, err := DeadlineBody(format, a)
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%q: %s %v", format, b, err)
		}
	}
	if _, err := DeadlineBody("fax", a); err == nil {
		t.Error("unknown format accepted")
	}
}

func TestDeadlineMissedPostsToTheJobsWebhook(t *testing.T) {
	got := make(chan map[string]any, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &m)
		got <- m
	}))
	defer srv.Close()
	s := New(slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	s.DeadlineMissed(observe.DeadlineAlert{Kind: observe.DeadlineStart, Job: "nohook"}, observe.JobHook(jobs.Config{JobName: "nohook"})) // no URL: nothing
	s.DeadlineMissed(observe.DeadlineAlert{Kind: observe.DeadlineStart, Namespace: "default", Job: "j", Message: "late"},
		observe.JobHook(jobs.Config{JobName: "j", Props: map[string]string{"webhook.url": srv.URL, "webhook.format": "feishu"}}))
	select {
	case m := <-got:
		if m["msg_type"] != "text" || !strings.Contains(m["content"].(map[string]any)["text"].(string), "late") {
			t.Fatalf("body %v", m)
		}
	case <-time.After(10 * time.Second): // failure bound only
		t.Fatal("not delivered")
	}
	// A workflow run's alert goes to the workflow's webhook, naming the run.
	s.DeadlineMissed(observe.DeadlineAlert{Kind: observe.DeadlineRun, Namespace: "pay", Workflow: "nightly", RunID: "r1", Message: "slow"},
		observe.Hook{URL: srv.URL})
	select {
	case m := <-got:
		if m["workflow"] != "nightly" || m["runId"] != "r1" || m["namespace"] != "pay" || m["jobName"] != nil || m["kind"] != "run" {
			t.Fatalf("body %v", m)
		}
	case <-time.After(10 * time.Second): // failure bound only
		t.Fatal("not delivered")
	}
}
