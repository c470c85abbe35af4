package workflow

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func node(id, job string, deps ...string) Node { return Node{ID: id, Job: job, DependsOn: deps} }

func jobsFixture(name string) (JobInfo, error) {
	switch name {
	case "daemon_job":
		return JobInfo{Exists: true}, nil
	case "missing_job":
		return JobInfo{}, nil
	case "broken_job":
		return JobInfo{}, errors.New("store down")
	}
	return JobInfo{Exists: true, Transient: true}, nil
}

func TestValidateNamesTheProblem(t *testing.T) {
	str := func(s string) *string { return &s }
	base := func(nodes ...Node) Config { c := Default(); c.Name = "etl"; c.Nodes = nodes; return c }
	cases := []struct {
		name string
		cfg  Config
		want string // substring of the message; "" = valid
	}{
		{"the issue's example", Config{Name: "etl", Cron: "0 0 2 * * ?", MaxConcurrentRuns: 1, Nodes: []Node{
			node("extract", "extract_job"), node("clean", "clean_job", "extract"),
			{ID: "alert", Job: "alert_job", DependsOn: []string{"extract", "clean"}, Trigger: OneFailed}}}, ""},
		{"no name", Config{MaxConcurrentRuns: 1, Nodes: []Node{node("a", "j")}}, "name is required"},
		{"bad name", base(node("a", "j")).with(func(c *Config) { c.Name = "a/b" }), `name "a/b" may only contain`},
		{"reserved name", base(node("a", "j")).with(func(c *Config) { c.Name = "list" }), `name "list" is reserved`},
		{"no nodes", base(), "at least one node"},
		{"bad jitter", base(node("a", "j")).with(func(c *Config) { c.Cron, c.Jitter = "0 0 2 * * ?", "2 days" }), `jitter "2 days" must be a duration`},
		{"calendar without cron", base(node("a", "j")).with(func(c *Config) { c.Calendar = "biz" }), "jitter and calendar need a cron"},
		{"bad calendar name", base(node("a", "j")).with(func(c *Config) { c.Cron, c.Calendar = "0 0 2 * * ?", "Biz!" }), "calendar: "},
		{"H, jitter and calendar", base(node("a", "j")).with(func(c *Config) { c.Cron, c.Jitter, c.Calendar = "0 H 2 * * ?", "15m", "biz" }), ""},
		{"duplicate id", base(node("a", "j"), node("b", "j"), node("a", "k")), "nodes[2].id: duplicate node id 'a' (also nodes[0])"},
		{"empty id", base(node("", "j")), "nodes[0].id is required"},
		{"bad id", base(node("a b", "j")), `nodes[0].id "a b" may only contain`},
		{"missing job name", base(node("a", "")), "nodes[0].job is required"},
		{"missing dependency", base(node("a", "j"), node("b", "j", "a", "zz")), "nodes[1].dependsOn: node 'b' depends on 'zz', which is not a node"},
		{"dependency twice", base(node("a", "j"), node("b", "j", "a", "a")), "nodes[1].dependsOn lists 'a' twice"},
		{"unknown rule", base(node("a", "j"), Node{ID: "b", Job: "j", DependsOn: []string{"a"}, Trigger: "anySucceeded"}),
			`nodes[1].trigger: unknown trigger rule "anySucceeded"; use one of allSucceeded, allFailed, allDone, oneSucceeded, oneFailed`},
		{"rule on a root", base(Node{ID: "a", Job: "j", Trigger: OneFailed}), "nodes[0].trigger: node 'a' depends on no node"},
		{"self cycle", base(node("a", "j", "a")), "cycle: a → a"},
		{"cycle with its path", base(node("root", "j"), node("a", "j", "root", "c"), node("b", "j", "a"), node("c", "j", "b")),
			"cycle: a → b → c → a"},
		{"unknown job", base(node("a", "missing_job")), "nodes[0].job: job 'missing_job' does not exist"},
		{"daemon job", base(node("a", "j"), node("b", "daemon_job", "a")), "nodes[1].job: job 'daemon_job' is a DAEMON job"},
		{"bad cron", base(node("a", "j")).with(func(c *Config) { c.Cron = "nope" }), "cron:"},
		{"webhook", base(node("a", "j")).with(func(c *Config) { c.WebhookURL, c.WebhookFormat = "https://hooks.example/x", "feishu" }), ""},
		{"webhook not http", base(node("a", "j")).with(func(c *Config) { c.WebhookURL = "ftp://x" }), "webhookUrl must be an http(s) URL"},
		{"webhook format", base(node("a", "j")).with(func(c *Config) { c.WebhookURL, c.WebhookFormat = "http://x", "teams" }), "webhookFormat must be generic"},
		{"webhook format alone", base(node("a", "j")).with(func(c *Config) { c.WebhookFormat = "slack" }), "webhookFormat without webhookUrl"},
		{"never-firing cron", base(node("a", "j")).with(func(c *Config) { c.Cron = "0 0 0 30 2 ?" }), "never fires"},
		{"bad zone", base(node("a", "j")).with(func(c *Config) { c.TimeZone = "Mars/Base" }), `timeZone "Mars/Base"`},
		{"concurrency 0", base(node("a", "j")).with(func(c *Config) { c.MaxConcurrentRuns = 0 }), "maxConcurrentRuns must be between 1"},
		{"negative timeout", base(node("a", "j")).with(func(c *Config) { c.TimeoutSeconds = -1 }), "timeoutSeconds must not be negative"},
		{"long parameter", base(node("a", "j")).with(func(c *Config) { c.Parameter = str(strings.Repeat("x", 5000)) }), "parameter must be at most"},
		{"long node parameter", base(Node{ID: "a", Job: "j", JobParameter: str(strings.Repeat("x", 5000))}), "nodes[0].jobParameter must be at most"},
	}
	now := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate(now, time.UTC, jobsFixture)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("valid config refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
		})
	}
}

func TestValidateLookupFailureIsNotABadRequest(t *testing.T) {
	c := Default()
	c.Name, c.Nodes = "w", []Node{node("a", "broken_job")}
	err := c.Validate(time.Now(), time.UTC, jobsFixture)
	if err == nil || errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "store down") {
		t.Fatalf("lookup failure: %v", err)
	}
}

func (c Config) with(f func(*Config)) Config { f(&c); return c }
