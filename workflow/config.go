package workflow

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/jobs/cron"
)

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid workflow")

// Rule says when a node may start once the nodes it depends on are done.
type Rule string

// Trigger rules (Airflow's).
const (
	AllSucceeded Rule = "allSucceeded" // every upstream node succeeded (the default)
	AllFailed    Rule = "allFailed"    // every upstream node failed
	AllDone      Rule = "allDone"      // every upstream node ended, however
	OneSucceeded Rule = "oneSucceeded" // at least one upstream node succeeded (starts at the first)
	OneFailed    Rule = "oneFailed"    // at least one upstream node failed (starts at the first)
)

// Rules lists the trigger rules.
var Rules = []Rule{AllSucceeded, AllFailed, AllDone, OneSucceeded, OneFailed}

// Limits of a workflow.
const (
	MaxNodes             = 500
	MaxNodeIDLength      = 64
	MaxConcurrentRunsCap = 10_000
	MaxParameterBytes    = 4096
	MaxDescriptionBytes  = 4096
	// MaxQueuedRuns bounds a workflow's QUEUED runs: a trigger beyond it
	// is refused, a cron fire beyond it dropped.
	MaxQueuedRuns = 1000
)

// Config is a workflow as registered at /config/workflow/{name}.
type Config struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Cron fires runs on a Quartz schedule in TimeZone (default: the
	// scheduler's); empty: runs start on demand only.
	Cron     string `json:"cron,omitempty"`
	TimeZone string `json:"timeZone,omitempty"`
	// Jitter and Calendar are a job's (schedule.go; docs/jobs.md "Jitter,
	// calendars and several crons"): a fixed offset of the workflow's own
	// in [0, Jitter) ("" inherits cron_jitter, "0s" none), and a calendar
	// of its namespace whose excluded days skip its fires.
	Jitter   string `json:"jitter,omitempty"`
	Calendar string `json:"calendar,omitempty"`
	// Parameter is the default run parameter (cron fires, and triggers
	// that send none); nil: none.
	Parameter *string `json:"parameter,omitempty"`
	// MaxConcurrentRuns bounds the runs in state RUNNING (default 1); a
	// run beyond it waits as QUEUED.
	MaxConcurrentRuns int `json:"maxConcurrentRuns"`
	// Misfire is the rule for cron fires that arrive at the limit (or that
	// no leader fired): true queues every one, false collapses them into
	// one queued run.
	Misfire bool `json:"misfire"`
	// TimeoutSeconds ends a run that takes longer: its running nodes are
	// killed, the others skipped, and it fails (0: no limit).
	TimeoutSeconds int    `json:"timeoutSeconds,omitempty"`
	Nodes          []Node `json:"nodes"`
	// Deadlines raise alerts, never kill (docs/jobs.md "Deadlines",
	// package deadline): a run still QUEUED StartDeadlineSeconds after it
	// was created; a run RUNNING RunDeadlineSeconds after it started, or
	// at RunDeadlineAt ("HH:MM" in TimeZone). 0 and "": none.
	StartDeadlineSeconds int    `json:"startDeadlineSeconds,omitempty"`
	RunDeadlineSeconds   int    `json:"runDeadlineSeconds,omitempty"`
	RunDeadlineAt        string `json:"runDeadlineAt,omitempty"`
	// WebhookURL, when set, is sent the workflow's deadline alerts
	// (WebhookFormat: generic, dingtalk, wechat, slack or feishu), as a
	// job's props["webhook.url"] is sent its.
	WebhookURL    string `json:"webhookUrl,omitempty"`
	WebhookFormat string `json:"webhookFormat,omitempty"`
}

// Node is one step of a workflow: a registered TRANSIENT job.
type Node struct {
	ID        string   `json:"id"`
	Job       string   `json:"job"`
	DependsOn []string `json:"dependsOn,omitempty"`
	Trigger   Rule     `json:"trigger,omitempty"` // "" is allSucceeded
	// JobParameter overrides the run's parameter for this node; nil: the
	// run's parameter, or else the job's own jobParameter.
	JobParameter *string `json:"jobParameter,omitempty"`
}

// Default is a config with every default set (decode a body onto it).
func Default() Config { return Config{MaxConcurrentRuns: 1} }

// RuleOf is the node's trigger rule, with the default applied.
func (n Node) RuleOf() Rule {
	if n.Trigger == "" {
		return AllSucceeded
	}
	return n.Trigger
}

// JobInfo is what validation needs to know of a node's job.
type JobInfo struct {
	Exists    bool
	Transient bool
}

// JobLookup tells validation about a job by name.
type JobLookup func(name string) (JobInfo, error)

var nodeIDRE = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// reservedNames cannot name a workflow: GET /api/workflow/list and
// /api/workflow/events/… would shadow it.
var reservedNames = map[string]bool{"list": true, "events": true}

// Validate checks every field, naming the first problem: bad names, a
// duplicate node id, a dependency on a missing node, an unknown trigger
// rule, a cycle (with its path), an unknown or DAEMON job (through jobs;
// nil skips that check), a bad cron or time zone.
func (c Config) Validate(now time.Time, fallback *time.Location, jobsOf JobLookup) error {
	if err := c.validateHead(now, fallback); err != nil {
		return err
	}
	index, err := c.validateNodes()
	if err != nil {
		return err
	}
	if cyc := c.cycle(index); len(cyc) > 0 {
		return fmt.Errorf("%w: nodes: the dependencies form a cycle: %s", ErrInvalid, strings.Join(cyc, " → "))
	}
	if jobsOf == nil {
		return nil
	}
	for i, n := range c.Nodes {
		info, err := jobsOf(n.Job)
		if err != nil {
			return fmt.Errorf("workflow: look up job %q: %w", n.Job, err)
		}
		if !info.Exists {
			return fmt.Errorf("%w: nodes[%d].job: job '%s' does not exist; register it first", ErrInvalid, i, n.Job)
		}
		if !info.Transient {
			return fmt.Errorf("%w: nodes[%d].job: job '%s' is a DAEMON job; workflow nodes run TRANSIENT jobs only", ErrInvalid, i, n.Job)
		}
	}
	return nil
}

func (c Config) validateHead(now time.Time, fallback *time.Location) error {
	if err := app.ValidateName("name", c.Name); err != nil {
		return fmt.Errorf("%w: %s", ErrInvalid, strings.TrimPrefix(err.Error(), app.ErrInvalid.Error()+": "))
	}
	if reservedNames[c.Name] {
		return fmt.Errorf("%w: name %q is reserved by the REST API; choose another name", ErrInvalid, c.Name)
	}
	if len(c.Description) > MaxDescriptionBytes {
		return fmt.Errorf("%w: description must be at most %d bytes", ErrInvalid, MaxDescriptionBytes)
	}
	if c.Parameter != nil && len(*c.Parameter) > MaxParameterBytes {
		return fmt.Errorf("%w: parameter must be at most %d bytes", ErrInvalid, MaxParameterBytes)
	}
	if c.MaxConcurrentRuns < 1 || c.MaxConcurrentRuns > MaxConcurrentRunsCap {
		return fmt.Errorf("%w: maxConcurrentRuns must be between 1 and %d, got %d", ErrInvalid, MaxConcurrentRunsCap, c.MaxConcurrentRuns)
	}
	if c.TimeoutSeconds < 0 {
		return fmt.Errorf("%w: timeoutSeconds must not be negative, got %d", ErrInvalid, c.TimeoutSeconds)
	}
	if err := checkWebhook(c.WebhookURL, c.WebhookFormat); err != nil {
		return err
	}
	if err := jobs.CheckDeadlines(c.StartDeadlineSeconds, c.RunDeadlineSeconds, c.RunDeadlineAt); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if _, err := c.Location(fallback); err != nil {
		return err
	}
	if err := c.checkSchedule(); err != nil {
		return err
	}
	return c.checkCron(now, fallback)
}

func (c Config) trigger() cron.Trigger {
	return cron.Trigger{Cron: c.Cron, TimeZone: c.TimeZone, Key: c.Name}
}

// Location is the time zone of the workflow's cron, or fallback (UTC when
// nil).
func (c Config) Location(fallback *time.Location) (*time.Location, error) {
	loc, err := c.Timing().Location(orUTC(fallback))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return loc, nil
}

// Schedule parses the cron; nil when the workflow has none.
func (c Config) Schedule() (*cron.Schedule, error) {
	s, err := c.trigger().Schedule()
	if err != nil {
		return nil, fmt.Errorf("%w: cron: %v", ErrInvalid, err)
	}
	return s, nil
}

func (c Config) checkCron(now time.Time, fallback *time.Location) error {
	var bad *cron.ParseError
	switch err := c.trigger().CheckFires(now, orUTC(fallback)); {
	case errors.As(err, &bad):
		return fmt.Errorf("%w: cron: %v", ErrInvalid, err)
	case err != nil:
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

func orUTC(loc *time.Location) *time.Location {
	if loc == nil {
		return time.UTC
	}
	return loc
}

// validateNodes checks each node on its own and returns id → position.
func (c Config) validateNodes() (map[string]int, error) {
	if len(c.Nodes) == 0 {
		return nil, fmt.Errorf("%w: nodes: a workflow needs at least one node", ErrInvalid)
	}
	if len(c.Nodes) > MaxNodes {
		return nil, fmt.Errorf("%w: nodes: at most %d nodes, got %d", ErrInvalid, MaxNodes, len(c.Nodes))
	}
	index := make(map[string]int, len(c.Nodes))
	for i, n := range c.Nodes {
		switch {
		case n.ID == "":
			return nil, fmt.Errorf("%w: nodes[%d].id is required", ErrInvalid, i)
		case len(n.ID) > MaxNodeIDLength:
			return nil, fmt.Errorf("%w: nodes[%d].id must be at most %d characters", ErrInvalid, i, MaxNodeIDLength)
		case !nodeIDRE.MatchString(n.ID) || n.ID == "." || n.ID == "..":
			return nil, fmt.Errorf("%w: nodes[%d].id %q may only contain letters, digits, '.', '_' and '-'", ErrInvalid, i, n.ID)
		}
		if j, dup := index[n.ID]; dup {
			return nil, fmt.Errorf("%w: nodes[%d].id: duplicate node id '%s' (also nodes[%d])", ErrInvalid, i, n.ID, j)
		}
		index[n.ID] = i
		if err := app.ValidateName("job", n.Job); err != nil {
			return nil, fmt.Errorf("%w: nodes[%d].%s", ErrInvalid, i, strings.TrimPrefix(err.Error(), app.ErrInvalid.Error()+": "))
		}
		if n.JobParameter != nil && len(*n.JobParameter) > MaxParameterBytes {
			return nil, fmt.Errorf("%w: nodes[%d].jobParameter must be at most %d bytes", ErrInvalid, i, MaxParameterBytes)
		}
		if err := checkRule(i, n); err != nil {
			return nil, err
		}
	}
	for i, n := range c.Nodes {
		seen := map[string]bool{}
		for _, d := range n.DependsOn {
			if _, ok := index[d]; !ok {
				return nil, fmt.Errorf("%w: nodes[%d].dependsOn: node '%s' depends on '%s', which is not a node of this workflow", ErrInvalid, i, n.ID, d)
			}
			if seen[d] {
				return nil, fmt.Errorf("%w: nodes[%d].dependsOn lists '%s' twice", ErrInvalid, i, d)
			}
			seen[d] = true
		}
	}
	return index, nil
}

func checkRule(i int, n Node) error {
	if n.Trigger == "" {
		return nil
	}
	for _, r := range Rules {
		if n.Trigger == r {
			if len(n.DependsOn) == 0 && r != AllSucceeded {
				return fmt.Errorf("%w: nodes[%d].trigger: node '%s' depends on no node, so it starts with the run; trigger %s needs dependsOn", ErrInvalid, i, n.ID, r)
			}
			return nil
		}
	}
	names := make([]string, len(Rules))
	for k, r := range Rules {
		names[k] = string(r)
	}
	return fmt.Errorf("%w: nodes[%d].trigger: unknown trigger rule %q; use one of %s", ErrInvalid, i, n.Trigger, strings.Join(names, ", "))
}

// cycle returns a dependency cycle as a path of node ids in the order
// they would run (each node depends on the one before it), whose last
// element repeats the first (a → b → a), or nil.
func (c Config) cycle(index map[string]int) []string {
	const (
		unseen = iota
		onPath
		finished
	)
	mark := make([]int, len(c.Nodes))
	var path []string
	var visit func(i int) []string
	visit = func(i int) []string {
		mark[i] = onPath
		path = append(path, c.Nodes[i].ID)
		for _, d := range c.Nodes[i].DependsOn {
			j := index[d]
			switch mark[j] {
			case onPath:
				start := 0
				for k, id := range path {
					if id == d {
						start = k
					}
				}
				cyc := append(append([]string(nil), path[start:]...), d)
				slices.Reverse(cyc) // upstream first: the order the nodes would run in
				return cyc
			case unseen:
				if cyc := visit(j); cyc != nil {
					return cyc
				}
			}
		}
		mark[i] = finished
		path = path[:len(path)-1]
		return nil
	}
	for i := range c.Nodes {
		if mark[i] == unseen {
			if cyc := visit(i); cyc != nil {
				return cyc
			}
		}
	}
	return nil
}

// Snapshot is the definition a run keeps of each node, so a run goes on
// with the definition it started with when the workflow is updated.
func (c Config) Snapshot() []NodeRun {
	out := make([]NodeRun, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = NodeRun{ID: n.ID, Job: n.Job, DependsOn: append([]string(nil), n.DependsOn...), Trigger: n.RuleOf(),
			JobParameter: n.JobParameter, State: NodePending, Attempt: 1}
	}
	return out
}

// checkWebhook checks a workflow's webhook: an http(s) URL, and a format
// of the job webhooks' (none without a URL).
func checkWebhook(url, format string) error {
	if url == "" {
		if format != "" {
			return fmt.Errorf("%w: webhookFormat without webhookUrl", ErrInvalid)
		}
		return nil
	}
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") || len(url) > 2048 {
		return fmt.Errorf("%w: webhookUrl must be an http(s) URL (at most 2048 characters), got %q", ErrInvalid, url)
	}
	switch format {
	case "", "generic", "dingtalk", "wechat", "slack", "feishu":
		return nil
	}
	return fmt.Errorf("%w: webhookFormat must be generic, dingtalk, wechat, slack or feishu, got %q", ErrInvalid, format)
}
