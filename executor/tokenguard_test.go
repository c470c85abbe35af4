package executor

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	execpb "github.com/mesos/mesos-go/api/v1/lib/executor"
)

// TestTokenSentAndKeptFromTasks: the agent's token goes with the executor's calls as a
// bearer token, and the environment its tasks start from does not hold it.
func TestTokenSentAndKeptFromTasks(t *testing.T) {
	auth := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth <- r.Header.Get("Authorization")
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	a := NewHTTPAgent(strings.TrimPrefix(srv.URL, "http://"), "fw", "ex", "tok-123", false)
	call := &execpb.Call{Type: execpb.Call_MESSAGE, Message: &execpb.Call_Message{Data: []byte("x")}}
	if err := a.Send(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	if got := <-auth; got != "Bearer tok-123" {
		t.Fatalf("Authorization = %q", got)
	}
	env := withoutVar([]string{"A=1", TokenEnv + "=tok-123", "MESOS_EXECUTOR_ID=ex", TokenEnv + "X=kept"}, TokenEnv)
	if !slices.Equal(env, []string{"A=1", "MESOS_EXECUTOR_ID=ex", TokenEnv + "X=kept"}) {
		t.Fatalf("env %v", env)
	}
}
