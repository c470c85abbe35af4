package webhook

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
)

func TestFormats(t *testing.T) {
	n := Notification{JobName: "j", TaskID: "t", ShardingItem: 2, State: "TASK_FAILED", Message: "exit code 3: boom",
		Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	for format, want := range map[string]string{
		"":         `"jobName":"j"`,
		"generic":  `"message":"exit code 3: boom"`,
		"dingtalk": `{"msgtype":"text","text":{"content":"[ElasticJob] job j shard 2 TASK_FAILED`,
		"wechat":   `"msgtype":"text"`,
		"slack":    `{"text":"[ElasticJob] job j shard 2 TASK_FAILED at 2026-01-01T00:00:00Z: exit code 3: boom (task t)"}`,
		"feishu":   `{"content":{"text":"[ElasticJob] job j shard 2 TASK_FAILED`,
	} {
		b, err := Body(format, n)
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s: %s %v", format, b, err)
		}
	}
	if _, err := Body("fax", n); err == nil {
		t.Error("unknown format accepted")
	}
}

func TestDeliversWithRetry(t *testing.T) {
	var calls atomic.Int32
	got := make(chan map[string]any, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		var m map[string]any
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &m)
		got <- m
	}))
	defer srv.Close()
	s := New(slog.New(slog.DiscardHandler))
	s.Backoff = func(int) time.Duration { return 0 }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	job := jobs.Config{JobName: "j", Props: map[string]string{"webhook.url": srv.URL + "?access_token=x", "webhook.format": "slack"}}
	s.Notify(job, observe.TaskEvent{TaskID: "t", Item: 1}, engine.Status{State: "TASK_FAILED", Message: "exit code 1"})
	select {
	case m := <-got:
		if !strings.Contains(m["text"].(string), "exit code 1") {
			t.Fatalf("body %v", m)
		}
	case <-time.After(10 * time.Second): // failure bound only
		t.Fatal("not delivered")
	}
	if calls.Load() != 2 {
		t.Fatalf("calls = %d, want a retry after the 502", calls.Load())
	}
}

func TestRedact(t *testing.T) {
	if got := redact("https://h/robot/send?access_token=secret"); strings.Contains(got, "secret") {
		t.Fatal(got)
	}
}
