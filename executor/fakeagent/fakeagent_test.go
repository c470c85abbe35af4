package fakeagent

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mesos/mesos-go/api/v1/lib/executor"
)

// An executor subscribes again the moment its stream ends. Close ends the
// stream, so a new subscription could come in before the server closed,
// and the server's Close then waited for that open stream for ever (an
// executor test hung until go test's timeout). Close returns however fast
// the client comes back.
func TestCloseWhileTheClientSubscribesAgain(t *testing.T) {
	body, err := json.Marshal(&executor.Call{Type: executor.Call_SUBSCRIBE})
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		a := New(false)
		subscribed := make(chan struct{}, 1)
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			for {
				res, err := http.Post("http://"+a.Endpoint()+"/api/v1/executor", typeJSON, strings.NewReader(string(body)))
				if err != nil {
					return // the server is gone
				}
				select {
				case subscribed <- struct{}{}:
				default:
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
		}()
		<-subscribed
		<-a.Calls
		a.Close()
		<-stopped
	}
}
