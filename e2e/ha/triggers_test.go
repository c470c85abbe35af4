//go:build e2e

package ha

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// Triggers with idempotency keys: the key is also the run's KEY in
// runs.log, so each accepted trigger can be traced to its executions.

type triggerReq struct {
	JobName        string `json:"jobName"`
	JobParameter   string `json:"jobParameter"`
	IdempotencyKey string `json:"idempotencyKey"`
}

func (c *cluster) triggerBody(job, key string, sleep float64) []byte {
	b, _ := json.Marshal(triggerReq{JobName: job, JobParameter: fmt.Sprintf("%s %g %s", c.out, sleep, key), IdempotencyKey: key})
	return b
}

// answer is what an instance answered a trigger (code 0: transport error).
type answer struct {
	code       int
	body       string
	retryAfter string
	err        error
}

func (a answer) String() string {
	if a.err != nil {
		return "error: " + a.err.Error()
	}
	if a.retryAfter != "" {
		return fmt.Sprintf("%d %s (Retry-After %s)", a.code, a.body, a.retryAfter)
	}
	return fmt.Sprintf("%d %s", a.code, a.body)
}

func (a answer) accepted() bool { return a.err == nil && a.code == http.StatusOK }

// clearRefusal is a 503 with a JSON message, the refusal a client may
// retry.
func (a answer) clearRefusal() bool {
	var m struct {
		Message string `json:"message"`
	}
	return a.err == nil && a.code == http.StatusServiceUnavailable && json.Unmarshal([]byte(a.body), &m) == nil && m.Message != ""
}

func (c *cluster) trigger(in *instance, job, key string, sleep float64) answer {
	code, out, hdr, err := in.request(http.MethodPost, "/api/job/trigger", c.triggerBody(job, key, sleep))
	a := answer{code: code, body: string(out), err: err}
	if hdr != nil {
		a.retryAfter = hdr.Get("Retry-After")
	}
	return a
}

// triggerUntilAccepted retries a keyed trigger on in until it is accepted
// (a retry of a trigger that had committed answers duplicate, also 200).
func (c *cluster) triggerUntilAccepted(in *instance, job, key string, sleep float64) {
	c.t.Helper()
	var last answer
	if !poll(waitLong, func() bool { last = c.trigger(in, job, key, sleep); return last.accepted() }) {
		c.t.Fatalf("trigger %s on %s never accepted; last answer: %v", key, in.name, last)
	}
}

// slowRequest is a request whose body arrives in two parts: the handler
// starts on the first and blocks reading the rest.
type slowRequest struct {
	conn   net.Conn
	rest   []byte
	answer chan answer
}

func (in *instance) slowPost(path string, body []byte, first int) (*slowRequest, error) {
	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", in.port))
	if err != nil {
		return nil, err
	}
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
		path, len(body))
	if _, err := conn.Write(append([]byte(head), body[:first]...)); err != nil {
		conn.Close()
		return nil, err
	}
	s := &slowRequest{conn: conn, rest: body[first:], answer: make(chan answer, 1)}
	go func() {
		defer conn.Close()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			s.answer <- answer{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		s.answer <- answer{code: resp.StatusCode, body: string(b), retryAfter: resp.Header.Get("Retry-After"), err: err}
	}()
	return s, nil
}

// finish sends the rest of the body.
func (s *slowRequest) finish() error {
	_, err := s.conn.Write(s.rest)
	return err
}

func (s *slowRequest) wait(timeout time.Duration) answer {
	select {
	case a := <-s.answer:
		return a
	case <-time.After(timeout):
		s.conn.Close()
		return answer{err: fmt.Errorf("no answer within %v", timeout)}
	}
}

// keyRuns counts the runs of each trigger key, by shard.
func keyRuns(rs []*shardRun, job string) map[string]map[int]int {
	m := map[string]map[int]int{}
	for _, r := range rs {
		if r.job != job {
			continue
		}
		if m[r.key] == nil {
			m[r.key] = map[int]int{}
		}
		m[r.key][r.item]++
	}
	return m
}
