// Package agents reads what Mesos agents know: executor sandboxes and the
// files in them. It speaks the HTTP endpoints real Mesos serves (master
// /slaves for the agent list, agent /state for executors, agent
// /files/read for file contents), which the embedded master+agent serves
// too, so task logs work the same on one machine and on a cluster. The
// agent list is kept for Client.MaxAge: it is read for every job
// registration (fits check), and a large cluster's list is costly to
// serve and to decode.
package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrNotFound is returned for unknown agents, executors and files.
var ErrNotFound = errors.New("agents: not found")

// Client reads agent state through the master.
type Client struct {
	MasterURL string
	// Master, when set, is asked for the master's base URL before every request (it follows
	// the leading master; MasterURL is then unused).
	Master func() string
	HTTP   *http.Client
	// Principal and Secret, when Secret is set, go as HTTP Basic with every
	// request (a master or agent that authenticates its read endpoints,
	// as the embedded one does).
	Principal, Secret string
	// MaxAge is how long an agent list read from the master is reused
	// (one read at a time refreshes it); 0 reads it on every call.
	MaxAge time.Duration

	mu     sync.Mutex // serializes refreshes of the cached list
	cached []Agent
	from   string    // the master it was read from
	at     time.Time // when
}

// DefaultMaxAge is Client.MaxAge after New.
const DefaultMaxAge = 2 * time.Second

// Leader is the base URL of the master agents are read through now.
func (c *Client) Leader() string { return c.master() }

func (c *Client) master() string {
	if c.Master != nil {
		return strings.TrimRight(c.Master(), "/")
	}
	return c.MasterURL
}

// New makes a client with a bounded HTTP timeout that reuses the agent
// list for DefaultMaxAge.
func New(masterURL string) *Client {
	return &Client{MasterURL: strings.TrimRight(masterURL, "/"), HTTP: &http.Client{Timeout: 10 * time.Second},
		MaxAge: DefaultMaxAge}
}

// Agent is one agent as the master lists it.
type Agent struct {
	ID            string         `json:"id"`
	Hostname      string         `json:"hostname"`
	PID           string         `json:"pid"`
	Active        bool           `json:"active"`
	Resources     map[string]any `json:"resources"`
	UsedResources map[string]any `json:"used_resources"`
	// Isolation is filled by FillIsolation (the master does not know it).
	Isolation *Isolation `json:"isolation,omitempty"`
}

// Executor is one executor run on an agent.
type Executor struct {
	ID          string `json:"id"`
	FrameworkID string `json:"framework_id"`
	Directory   string `json:"directory"`
	AgentID     string `json:"-"`
	Hostname    string `json:"-"`
	Completed   bool   `json:"-"`
}

func (c *Client) getJSON(ctx context.Context, u string, v any) error {
	return c.get(ctx, u, func(r io.Reader) error { return json.NewDecoder(r).Decode(v) })
}

// get GETs u and hands the body (at most 64 MiB) to decode.
func (c *Client) get(ctx context.Context, u string, decode func(io.Reader) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	if c.Secret != "" {
		req.SetBasicAuth(c.Principal, c.Secret)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("agents: GET %s: %w", u, err)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // drained: the connection is reused
		resp.Body.Close()
	}()
	if resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("%w: GET %s: 404", ErrNotFound, u)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("agents: GET %s: %s: %s", u, resp.Status, strings.TrimSpace(string(b)))
	}
	if err := decode(io.LimitReader(resp.Body, 64<<20)); err != nil {
		return fmt.Errorf("agents: decode %s: %w", u, err)
	}
	return nil
}

// Agents lists the master's agents (GET /slaves), reusing a list read
// from the same master less than MaxAge ago.
func (c *Client) Agents(ctx context.Context) ([]Agent, error) {
	m := c.master()
	if m == "" {
		return nil, errors.New("agents: no leading Mesos master known yet")
	}
	if c.MaxAge <= 0 {
		return c.readAgents(ctx, m)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cached != nil && c.from == m && time.Since(c.at) < c.MaxAge {
		return slices.Clone(c.cached), nil
	}
	ags, err := c.readAgents(ctx, m)
	if err != nil {
		return nil, err
	}
	if ags == nil {
		ags = []Agent{}
	}
	c.cached, c.from, c.at = ags, m, time.Now()
	return slices.Clone(ags), nil
}

func (c *Client) readAgents(ctx context.Context, master string) ([]Agent, error) {
	var out []Agent
	err := c.get(ctx, master+"/slaves", func(r io.Reader) error {
		var err error
		out, err = decodeSlaves(r)
		return err
	})
	return out, err
}

// decodeSlaves reads a master's /slaves one agent at a time: a decoder
// given the whole document holds all of it in its buffer while it decodes
// (tens of MB at 1,000 agents, the largest single item of a leader's
// heap at 100,000 jobs).
func decodeSlaves(r io.Reader) ([]Agent, error) {
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	var out []Agent
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if key != "slaves" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, err
			}
			continue
		}
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if t == nil {
			continue // "slaves": null
		}
		if d, ok := t.(json.Delim); !ok || d != '[' {
			return nil, fmt.Errorf("slaves: want an array, found %v", t)
		}
		for dec.More() {
			var a Agent
			if err := dec.Decode(&a); err != nil {
				return nil, err
			}
			out = append(out, a)
		}
		if err := expectDelim(dec, ']'); err != nil {
			return nil, err
		}
	}
	return out, expectDelim(dec, '}')
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q, found %v", want, t)
	}
	return nil
}

// agentURL turns an agent's pid ("slave(1)@host:port") into its base URL.
func agentURL(a Agent) (string, error) {
	_, hostPort, ok := strings.Cut(a.PID, "@")
	if !ok || hostPort == "" {
		return "", fmt.Errorf("agents: agent %s has no usable pid %q", a.ID, a.PID)
	}
	return "http://" + hostPort, nil
}

func (c *Client) agent(ctx context.Context, agentID string) (Agent, string, error) {
	all, err := c.Agents(ctx)
	if err != nil {
		return Agent{}, "", err
	}
	for _, a := range all {
		if a.ID == agentID {
			u, err := agentURL(a)
			return a, u, err
		}
	}
	return Agent{}, "", fmt.Errorf("%w: agent %s is not registered with the master", ErrNotFound, agentID)
}

type agentState struct {
	Frameworks          []frameworkState `json:"frameworks"`
	CompletedFrameworks []frameworkState `json:"completed_frameworks"`
}

type frameworkState struct {
	ID                 string     `json:"id"`
	Executors          []Executor `json:"executors"`
	CompletedExecutors []Executor `json:"completed_executors"`
}

// Executors lists the executors (running first, then completed, newest
// completed last) of one agent whose id starts with prefix.
func (c *Client) Executors(ctx context.Context, agentID, prefix string) ([]Executor, error) {
	a, base, err := c.agent(ctx, agentID)
	if err != nil {
		return nil, err
	}
	var st agentState
	if err := c.getJSON(ctx, base+"/state", &st); err != nil {
		return nil, err
	}
	var out []Executor
	add := func(es []Executor, fw string, done bool) {
		for _, e := range es {
			if strings.HasPrefix(e.ID, prefix) {
				e.AgentID, e.Hostname, e.Completed = agentID, a.Hostname, done
				if e.FrameworkID == "" {
					e.FrameworkID = fw
				}
				out = append(out, e)
			}
		}
	}
	for _, fw := range append(st.Frameworks, st.CompletedFrameworks...) {
		add(fw.Executors, fw.ID, false)
		add(fw.CompletedExecutors, fw.ID, true)
	}
	return out, nil
}

// Read reads length bytes at offset of a file on an agent; offset < 0
// reads the last -offset bytes. It returns the data, where it starts, and
// the file's size.
func (c *Client) Read(ctx context.Context, agentID, path string, offset, length int64) (string, int64, int64, error) {
	_, base, err := c.agent(ctx, agentID)
	if err != nil {
		return "", 0, 0, err
	}
	size, err := c.read(ctx, base, path, -1, 0)
	if err != nil {
		return "", 0, 0, err
	}
	if offset < 0 {
		offset = max(size.Offset+offset, 0)
	}
	chunk, err := c.read(ctx, base, path, offset, length)
	if err != nil {
		return "", 0, 0, err
	}
	return chunk.Data, offset, size.Offset, nil
}

type filesRead struct {
	Data   string `json:"data"`
	Offset int64  `json:"offset"`
}

func (c *Client) read(ctx context.Context, base, path string, offset, length int64) (filesRead, error) {
	q := url.Values{"path": {path}, "offset": {strconv.FormatInt(offset, 10)}}
	if offset >= 0 {
		q.Set("length", strconv.FormatInt(length, 10))
	}
	var fr filesRead
	err := c.getJSON(ctx, base+"/files/read?"+q.Encode(), &fr)
	return fr, err
}

// Entry is one entry of an agent's /files/browse.
type Entry struct {
	Path  string  `json:"path"`
	Size  int64   `json:"size"`
	MTime float64 `json:"mtime"`
	Mode  string  `json:"mode"` // as ls prints it ("prw-r--r--" a FIFO), after a stat that follows links
	Nlink int     `json:"nlink"`
}

// Browse lists a directory on an agent (its /files/browse).
func (c *Client) Browse(ctx context.Context, agentID, path string) ([]Entry, error) {
	_, base, err := c.agent(ctx, agentID)
	if err != nil {
		return nil, err
	}
	var out []Entry
	err = c.getJSON(ctx, base+"/files/browse?"+url.Values{"path": {path}}.Encode(), &out)
	return out, err
}
