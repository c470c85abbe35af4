package executor

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
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
	a := &httpAgent{
		sender:     calls.SenderWith(httpexec.NewSender(cli.Send), callOpts...),
		subscriber: calls.SenderWith(httpexec.NewSender(cli.Send, httpcli.Close(true)), callOpts...),
	}
	if !protobuf {
		return a
	}
	// The agent that asks for protobuf is ours: it also takes several
	// calls in one request (see BatchAgent).
	return &batchingAgent{httpAgent: a, url: u.String(), token: token, callOpts: callOpts,
		hc: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1, ResponseHeaderTimeout: 10 * time.Second}}}
}

// BatchAgent is an Agent that takes several UPDATE and MESSAGE calls in
// one request, applying all of them in their order or none.
type BatchAgent interface {
	Agent
	// SendBatch sends calls in one request. A *BatchRefused error means
	// the agent applied none of them.
	SendBatch(ctx context.Context, calls []*executor.Call) error
}

// BatchRefused is an agent's 4xx answer to a batch: none of its calls was
// applied. 415 Unsupported Media Type is an agent that takes one call per
// request (a Mesos agent, or ours before it took batches).
type BatchRefused struct {
	Code int
	Msg  string
}

func (e *BatchRefused) Error() string {
	return fmt.Sprintf("batch of calls refused: %d %s: %s", e.Code, http.StatusText(e.Code), e.Msg)
}

// batchingAgent is the embedded agent's executor API, which takes a batch
// as one POST whose body is the calls' RecordIO records
// (Content-Type application/recordio, each call in protobuf).
type batchingAgent struct {
	*httpAgent
	url, token string
	callOpts   executor.CallOptions
	hc         *http.Client
}

var _ BatchAgent = (*batchingAgent)(nil)

func (a *batchingAgent) SendBatch(ctx context.Context, cs []*executor.Call) error {
	var body []byte
	for _, c := range cs {
		b, err := c.With(a.callOpts...).Marshal()
		if err != nil {
			return err
		}
		body = mesosframe.AppendRecord(body, b)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/recordio")
	req.Header.Set("Message-Content-Type", "application/x-protobuf")
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	_, _ = io.Copy(io.Discard, resp.Body) // read to its end: the connection is kept for the next batch
	switch {
	case resp.StatusCode == http.StatusAccepted:
		return nil
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return &BatchRefused{Code: resp.StatusCode, Msg: string(bytes.TrimSpace(msg))}
	}
	return fmt.Errorf("batch of calls: %s: %s", resp.Status, bytes.TrimSpace(msg))
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
