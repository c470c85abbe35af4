package executor

import (
	"context"
	"net/url"
	"strings"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/executor"
	"github.com/mesos/mesos-go/api/v1/lib/executor/calls"
	"github.com/mesos/mesos-go/api/v1/lib/httpcli"
	"github.com/mesos/mesos-go/api/v1/lib/httpcli/httpexec"

	"github.com/ejcloud/elasticjob/internal/mesosframe"
)

// Agent is the executor's view of the Mesos agent's v1 executor API.
type Agent interface {
	// Subscribe sends SUBSCRIBE and returns the event stream.
	Subscribe(ctx context.Context, call *executor.Call) (Events, error)
	// Send sends a non-streaming call such as UPDATE.
	Send(ctx context.Context, call *executor.Call) error
}

// Events is an open subscription.
type Events interface {
	Decode(*executor.Event) error
	Close() error
}

// httpAgent speaks the v1 executor HTTP API with the JSON codec through
// mesos-go's httpcli/httpexec.
type httpAgent struct {
	sender, subscriber calls.Sender
}

var _ Agent = (*httpAgent)(nil)

// NewHTTPAgent talks to endpoint (MESOS_AGENT_ENDPOINT, "host:port" or a
// URL) as the given framework's executor. A token
// (MESOS_EXECUTOR_AUTHENTICATION_TOKEN, set by an agent that authenticates
// executors: the embedded one always, a Mesos agent with
// --authenticate_http_executors) goes with every call as
// "Authorization: Bearer". With protobuf the calls and events are protobuf
// (an agent of ours, which has the same protos, asks for it: a fraction of
// JSON's cost to encode and decode, on both sides), otherwise JSON.
func NewHTTPAgent(endpoint, frameworkID, executorID, token string, protobuf bool) Agent {
	u := url.URL{Scheme: "http", Host: endpoint, Path: "/api/v1/executor"}
	if strings.Contains(endpoint, "://") {
		if p, err := url.Parse(endpoint); err == nil {
			u.Scheme, u.Host = p.Scheme, p.Host
		}
	}
	opts := []httpcli.Opt{
		httpcli.Endpoint(u.String()),
		httpcli.Codec(jsonCodec),
		httpcli.Do(httpcli.With(httpcli.Timeout(10 * time.Second))),
	}
	if token != "" {
		opts = append(opts, httpcli.DefaultHeader("Authorization", "Bearer "+token))
	}
	if protobuf {
		opts = append(opts, httpcli.Codec(mesosframe.ProtobufCodec))
	}
	cli := httpcli.New(opts...)
	callOpts := executor.CallOptions{calls.Framework(frameworkID), calls.Executor(executorID)}
	return &httpAgent{
		sender:     calls.SenderWith(httpexec.NewSender(cli.Send), callOpts...),
		subscriber: calls.SenderWith(httpexec.NewSender(cli.Send, httpcli.Close(true)), callOpts...),
	}
}

func (a *httpAgent) Subscribe(ctx context.Context, call *executor.Call) (Events, error) {
	resp, err := a.subscriber.Send(ctx, calls.NonStreaming(call))
	if err != nil {
		if resp != nil {
			resp.Close()
		}
		return nil, err
	}
	return events{resp}, nil
}

func (a *httpAgent) Send(ctx context.Context, call *executor.Call) error {
	resp, err := a.sender.Send(ctx, calls.NonStreaming(call))
	if resp != nil {
		resp.Close()
	}
	return err
}

type events struct{ resp mesos.Response }

func (e events) Decode(ev *executor.Event) error { return e.resp.Decode(ev) }
func (e events) Close() error                    { return e.resp.Close() }
