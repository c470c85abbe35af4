package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
)

// dingTalkRobot is a DingTalk custom robot with security settings, checking a post as
// DingTalk documents it: the timestamp (ms) within an hour of now, sign = base64 of
// HMAC-SHA256(secret, timestamp+"\n"+secret) (the query decodes the URL escaping), and the
// keyword in the text. Like DingTalk it answers 200 either way, refusals with an errcode.
func dingTalkRobot(t *testing.T, secret, keyword string, got chan<- string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		refuse := func(code int, msg string) {
			_, _ = w.Write([]byte(`{"errcode":` + strconv.Itoa(code) + `,"errmsg":"` + msg + `"}`))
			got <- "refused: " + msg
		}
		if q.Get("access_token") != "tok" {
			refuse(300001, "token is not exist")
			return
		}
		ms, err := strconv.ParseInt(q.Get("timestamp"), 10, 64)
		if err != nil || time.Since(time.UnixMilli(ms)).Abs() > time.Hour {
			refuse(310000, "invalid timestamp")
			return
		}
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(q.Get("timestamp") + "\n" + secret))
		if want := base64.StdEncoding.EncodeToString(mac.Sum(nil)); q.Get("sign") != want {
			refuse(310000, "sign not match")
			return
		}
		var m struct {
			Text struct{ Content string } `json:"text"`
		}
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &m) != nil || !strings.Contains(m.Text.Content, keyword) {
			refuse(310000, "keywords not in content")
			return
		}
		_, _ = w.Write([]byte(`{"errcode":0,"errmsg":"ok"}`))
		got <- m.Text.Content
	}))
}

// TestSignedDingTalkRobotGetsTheAlert: a job with the 3.x DingTalk handler's
// dingtalk.secret and dingtalk.keyword (an upgraded job keeps the original's props) has its
// failure alert signed as DingTalk requires and carrying the keyword; a refusal (200 with
// an errcode) counts as a failed delivery, retried, never as delivered.
func TestSignedDingTalkRobotGetsTheAlert(t *testing.T) {
	got := make(chan string, 10)
	srv := dingTalkRobot(t, "SECabc123", "ops-alert", got)
	defer srv.Close()
	s := New(slog.New(slog.DiscardHandler))
	s.Backoff = func(int) time.Duration { return 0 }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	job := jobs.Config{JobName: "j", Props: map[string]string{"webhook.url": srv.URL + "/robot/send?access_token=tok", "webhook.format": "dingtalk",
		"dingtalk.secret": "SECabc123", "dingtalk.keyword": "ops-alert"}}
	s.Notify(job, observe.TaskEvent{TaskID: "t", Item: 1}, engine.Status{State: "TASK_FAILED", Message: "exit code 1"})
	select {
	case text := <-got:
		if strings.HasPrefix(text, "refused") || !strings.Contains(text, "ops-alert") || !strings.Contains(text, "exit code 1") {
			t.Fatalf("the robot got %q", text)
		}
	case <-time.After(10 * time.Second): // failure bound only
		t.Fatal("not delivered")
	}

	// A wrong secret: refused on every try, and the sender sees it.
	job.Props["dingtalk.secret"] = "wrong"
	s.Notify(job, observe.TaskEvent{TaskID: "t2", Item: 1}, engine.Status{State: "TASK_FAILED", Message: "exit code 2"})
	for try := range s.Attempts {
		select {
		case text := <-got:
			if text != "refused: sign not match" {
				t.Fatalf("try %d: %q, want the robot's refusal", try+1, text)
			}
		case <-time.After(10 * time.Second): // failure bound only
			t.Fatalf("try %d: no retry after the robot's refusal", try+1)
		}
	}
}

func TestSignMatchesDingTalksExample(t *testing.T) {
	at := time.UnixMilli(1577262236757)
	got := Sign("https://oapi.dingtalk.com/robot/send?access_token=x", "this is secret", at)
	mac := hmac.New(sha256.New, []byte("this is secret"))
	mac.Write([]byte("1577262236757\nthis is secret"))
	want := "https://oapi.dingtalk.com/robot/send?access_token=x&timestamp=1577262236757&sign=" +
		strings.NewReplacer("+", "%2B", "/", "%2F", "=", "%3D").Replace(base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	if got != want {
		t.Fatalf("Sign = %s\nwant   %s", got, want)
	}
	if Sign("https://h/x", "", at) != "https://h/x" {
		t.Fatal("an unsigned robot's URL changed")
	}
}

func TestRefusedReadsTheRobotsErrcode(t *testing.T) {
	for body, want := range map[string]bool{`{"errcode":0,"errmsg":"ok"}`: false, `{"errcode":310000,"errmsg":"sign not match"}`: true,
		`ok`: false, `{"ok":true}`: false, ``: false} {
		if err := refused([]byte(body)); (err != nil) != want {
			t.Errorf("%s: %v", body, err)
		}
	}
}
