package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/task"
)

// Sender implements observe.Notifier.
type Sender struct {
	Client   *http.Client
	Log      *slog.Logger
	Attempts int                     // tries per notification (default 3)
	Backoff  func(int) time.Duration // pause before try n (default 1s·n)
	queue    chan message
}

var _ observe.Notifier = (*Sender)(nil)

type message struct {
	url    string
	body   []byte
	secret string // a signed DingTalk robot's: each try is signed when sent
}

// New makes a sender; call Run to start delivering.
func New(log *slog.Logger) *Sender {
	return &Sender{Client: &http.Client{Timeout: 10 * time.Second}, Log: log, Attempts: 3,
		Backoff: func(n int) time.Duration { return time.Duration(n) * time.Second }, queue: make(chan message, 1000)}
}

// Notification is the generic body.
type Notification struct {
	JobName      string     `json:"jobName"`
	TaskID       string     `json:"taskId"`
	ShardingItem int        `json:"shardingItem"`
	State        task.State `json:"state"`
	Message      string     `json:"message"`
	Hostname     string     `json:"hostname,omitempty"`
	Time         time.Time  `json:"time"`
}

// Notify queues a notification (never blocks).
func (s *Sender) Notify(job jobs.Config, ev observe.TaskEvent, st engine.Status) {
	n := Notification{JobName: job.JobName, TaskID: ev.TaskID, ShardingItem: ev.Item, State: st.State,
		Message: st.Message, Hostname: ev.Hostname, Time: ev.At.UTC()}
	robot := RobotOf(job)
	body, err := robotBody(job.Props["webhook.format"], n, robot)
	if err != nil {
		s.Log.Warn("webhook: encode", "job", job.JobName, "err", err)
		return
	}
	s.enqueue(job.Props["webhook.url"], body, job.JobName, robot.Secret)
}

func (s *Sender) enqueue(url string, body []byte, job, secret string) {
	select {
	case s.queue <- message{url: url, body: body, secret: secret}:
	default:
		s.Log.Warn("webhook: queue full, notification dropped", "job", job)
	}
}

// Body renders a notification in a format.
func Body(format string, n Notification) ([]byte, error) {
	return robotBody(format, n, Robot{})
}

// robotBody renders a notification in a format, with a DingTalk robot's keyword.
func robotBody(format string, n Notification, r Robot) ([]byte, error) {
	text := fmt.Sprintf("[ElasticJob] job %s shard %d %s at %s: %s (task %s)",
		n.JobName, n.ShardingItem, n.State, n.Time.Format(time.RFC3339), n.Message, n.TaskID)
	return textBody(format, r.withKeyword(text), n)
}

// textBody renders text in a chat format, or v as the generic body.
func textBody(format, text string, v any) ([]byte, error) {
	switch format {
	case "", "generic":
		return json.Marshal(v)
	case "dingtalk", "wechat":
		return json.Marshal(map[string]any{"msgtype": "text", "text": map[string]string{"content": text}})
	case "slack":
		return json.Marshal(map[string]string{"text": text})
	case "feishu":
		return json.Marshal(map[string]any{"msg_type": "text", "content": map[string]string{"text": text}})
	}
	return nil, fmt.Errorf("webhook: unknown format %q", format)
}

// Run delivers queued notifications until ctx ends.
func (s *Sender) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-s.queue:
			s.deliver(ctx, m)
		}
	}
}

func (s *Sender) deliver(ctx context.Context, m message) {
	var err error
	for try := 1; try <= s.Attempts; try++ {
		if err = s.post(ctx, m); err == nil {
			return
		}
		if try < s.Attempts {
			select {
			case <-ctx.Done():
				return
			case <-time.After(s.Backoff(try)):
			}
		}
	}
	s.Log.Warn("webhook: giving up", "url", redact(m.url), "err", err)
}

func (s *Sender) post(ctx context.Context, m message) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, Sign(m.url, m.secret, time.Now()), bytes.NewReader(m.body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("webhook: %s", resp.Status)
	}
	return refused(answer)
}

// refused is the refusal a chat robot answers with 200: DingTalk and WeChat Work say
// {"errcode": N, "errmsg": …}, N not 0 (a bad signature, a missing keyword, a wrong
// token); without this a refused alert looked delivered.
func refused(answer []byte) error {
	var a struct {
		Errcode *int   `json:"errcode"`
		Errmsg  string `json:"errmsg"`
	}
	if json.Unmarshal(answer, &a) != nil || a.Errcode == nil || *a.Errcode == 0 {
		return nil
	}
	return fmt.Errorf("webhook: the robot refused the message: errcode %d: %s", *a.Errcode, a.Errmsg)
}

// redact drops the query (robot tokens live there) from a URL for logs.
func redact(u string) string {
	for i := range len(u) {
		if u[i] == '?' {
			return u[:i] + "?…"
		}
	}
	return u
}
