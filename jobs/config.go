package jobs

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs/cron"
	"github.com/ejcloud/elasticjob/jobs/timing"
	"github.com/ejcloud/elasticjob/namespace"
)

// ExecutionType is TRANSIENT or DAEMON.
type ExecutionType string

const (
	Transient ExecutionType = "TRANSIENT"
	Daemon    ExecutionType = "DAEMON"
)

// Separator joins the parts of task ids, executor ids and running keys.
const Separator = "@-@"

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid job")

// Config is a job as registered at /config/job/{jobName}.
type Config struct {
	JobName          string        `json:"jobName"`
	AppName          string        `json:"appName"`
	JobExecutionType ExecutionType `json:"jobExecutionType"`
	Cron             string        `json:"cron"`
	TimeZone         string        `json:"timeZone,omitempty"`
	// When it fires, besides Cron (schedule.go, docs/jobs.md "Jitter,
	// calendars and several crons"): more crons (the job fires at the
	// union, once per instant), a jitter window ("30m": each fire moved
	// later by a fixed offset of the job's own; "" inherits the
	// scheduler's cron_jitter, "0s" opts out) and the name of a calendar
	// of the job's namespace whose excluded days skip fires.
	Crons                  []string          `json:"crons,omitempty"`
	Jitter                 string            `json:"jitter,omitempty"`
	Calendar               string            `json:"calendar,omitempty"`
	ShardingTotalCount     int               `json:"shardingTotalCount"`
	ShardingItemParameters string            `json:"shardingItemParameters"`
	JobParameter           string            `json:"jobParameter"`
	CPUCount               float64           `json:"cpuCount"`
	MemoryMB               float64           `json:"memoryMB"`
	Failover               bool              `json:"failover"`
	Misfire                bool              `json:"misfire"`
	Description            string            `json:"description"`
	Props                  map[string]string `json:"props"`
	// JobType picks what a shard runs: "" runs the app's bootstrap script;
	// SCRIPT runs props["script.command.line"]; HTTP calls props["http.url"]
	// and needs no app download; SIMPLE and DATAFLOW (the 2.x names) run
	// the Java class JobClass from the app, as "" does.
	JobType JobType `json:"jobType,omitempty"`
	// JobClass names the Java class each shard runs (a SimpleJob or
	// DataflowJob of the original's API, in the app's jar or class path: the
	// practice guide's jobClass and the 2.x register body's); BeanName and
	// ApplicationContext name a bean of a Spring XML context in the app
	// instead (2.x). See docs/jobs.md, "Coming from ElasticJob-Cloud".
	JobClass           string `json:"jobClass,omitempty"`
	BeanName           string `json:"beanName,omitempty"`
	ApplicationContext string `json:"applicationContext,omitempty"`
	// TimeoutSeconds ends a run that takes longer (0: no limit).
	TimeoutSeconds int `json:"timeoutSeconds,omitempty"`
	// MaxRetries relaunches a failed shard up to this many times, waiting
	// RetryBackoffSeconds × 2^(attempt-1) before each retry.
	MaxRetries          int `json:"maxRetries,omitempty"`
	RetryBackoffSeconds int `json:"retryBackoffSeconds,omitempty"`
	// JobErrorHandlerType says what a failed run does: LOG (default) and
	// THROW report a failure; IGNORE reports the run as a success (the exit
	// code stays in the message); WEBHOOK reports a failure and posts a
	// notification to props["webhook.url"] (format props["webhook.format"]:
	// generic, dingtalk, wechat, slack or feishu).
	JobErrorHandlerType string `json:"jobErrorHandlerType,omitempty"`
	// PauseAfterFailures disables the job when this many runs in a row
	// failed (0: never). A run fails when one of its shards fails for good
	// (after its maxRetries); a successful run resets the count.
	PauseAfterFailures int `json:"pauseAfterFailures,omitempty"`
	// Preemptible (TRANSIENT jobs only) lets the scheduler take back the
	// capacity a run borrowed beyond its namespace's guarantee when a
	// namespace within its guarantee needs it: the run is killed
	// gracefully (SIGTERM, the kill grace period) and queued again as a
	// misfire, never counted as a failure (docs/tenancy.md).
	Preemptible bool `json:"preemptible,omitempty"`
	// Accepted for compatibility with the original's job config; stored and
	// shown, with no effect.
	JobExecutorServiceHandlerType string `json:"jobExecutorServiceHandlerType,omitempty"`
	// Secrets are the secrets each shard gets, as environment variables
	// or files (secrets.go): names only, never a value.
	Secrets []SecretRef `json:"secrets,omitempty"`
	// PodTemplate, on Kubernetes, is merged over the app's podTemplate into the job's pods
	// (engine/kube/podtemplate.go, docs/kubernetes.md). Refused on Mesos.
	PodTemplate app.PodTemplate `json:"podTemplate,omitempty"`
	// Deadlines raise alerts (history, metric, console, webhook), never
	// kill (deadline.go, docs/jobs.md "Deadlines"): a run not started
	// StartDeadlineSeconds after its fire; a run still going after
	// RunDeadlineSeconds, or past RunDeadlineAt ("HH:MM" in the job's time
	// zone) on the day it started. 0 and "": none.
	StartDeadlineSeconds int    `json:"startDeadlineSeconds,omitempty"`
	RunDeadlineSeconds   int    `json:"runDeadlineSeconds,omitempty"`
	RunDeadlineAt        string `json:"runDeadlineAt,omitempty"`
	// Clusters are the clusters the job may run on, in order of preference ([]: its
	// namespace's, else any; docs/clusters.md). An execution's shards run on one cluster,
	// the first of them with room for all, unless SpreadClusters lets them spread over
	// the clusters named.
	Clusters       []string `json:"clusters,omitempty"`
	SpreadClusters bool     `json:"spreadClusters,omitempty"`
	// MoveOverlapSeconds, for a DAEMON job, declares that a shard moved to another cluster
	// starts there before it stops where it ran: the old task is killed once the new one
	// runs, and when the new one does not run within this many seconds it is given up
	// and the old one runs on (docs/clusters.md). 0: a moved shard stops, then starts.
	MoveOverlapSeconds int `json:"moveOverlapSeconds,omitempty"`
}

// MaxMoveOverlapSeconds bounds moveOverlapSeconds (1 hour): a replacement that takes
// longer to start is a move gone wrong, and the two tasks hold both clusters' resources
// while it lasts.
const MaxMoveOverlapSeconds = 3600

// JobType is what a shard runs.
type JobType string

// Job types.
const (
	TypeApp      JobType = ""
	TypeScript   JobType = "SCRIPT"
	TypeHTTP     JobType = "HTTP"
	TypeSimple   JobType = "SIMPLE"   // 2.x: the Java SimpleJob JobClass (runs as TypeApp)
	TypeDataflow JobType = "DATAFLOW" // 2.x: the Java DataflowJob JobClass (runs as TypeApp)
)

// Error handler types.
const (
	HandlerLog     = "LOG"
	HandlerThrow   = "THROW"
	HandlerIgnore  = "IGNORE"
	HandlerWebhook = "WEBHOOK"
)

// Limits of the run settings.
const (
	MaxRetriesLimit = 10
	MaxBackoff      = 3600
	MaxPauseAfter   = 1000
)

// Default returns a Config holding the defaults; decode a request body into
// it so that absent fields keep their defaults.
func Default() Config {
	return Config{JobExecutionType: Transient, ShardingTotalCount: 1, CPUCount: 1, MemoryMB: 128, Props: map[string]string{}}
}

// ExecutorApp is the app whose executor runs the job: its own, or, for
// an HTTP job that names none, its namespace's HTTP executor (HTTPApp).
func (c Config) ExecutorApp() string {
	if c.AppName == "" {
		return HTTPApp(namespace.Of(c.JobName))
	}
	return c.AppName
}

// HTTPApp is the key of the app whose executor runs namespace ns's HTTP
// jobs that name no app: app.HTTPOnlyName in the default namespace (the
// original's executor id), "{ns}~elasticjob-http" in any other. One
// executor serving every namespace would run as one namespace's user,
// under that namespace's caps, with every namespace's responses in one
// sandbox: another team's output would stop it, and every team's HTTP
// runs with it.
func HTTPApp(ns string) string { return namespace.Key(ns, app.HTTPOnlyName) }

// IsHTTPApp reports whether key is a namespace's HTTP executor's app
// (HTTPApp): the reserved name is refused for every namespace's own apps.
func IsHTTPApp(key string) bool { return namespace.Name(key) == app.HTTPOnlyName }

// NeedsPackage reports whether the job runs its app's package (jobType "",
// SIMPLE or DATAFLOW), so its app must have an appURL; SCRIPT and HTTP jobs
// fetch nothing without one.
func (c Config) NeedsPackage() bool {
	return c.JobType == TypeApp || c.JobType == TypeSimple || c.JobType == TypeDataflow
}

// JavaClass is the Java class the job names: JobClass, or props["jobClass"]
// where the practice guide's alias kept it before JobClass existed.
func (c Config) JavaClass() string {
	if c.JobClass != "" {
		return c.JobClass
	}
	return c.Props["jobClass"]
}

func (c Config) trigger() cron.Trigger {
	return cron.Trigger{Cron: c.Cron, TimeZone: c.TimeZone, Key: c.JobName}
}

// Location returns the job's time zone, or fallback when none is set.
func (c Config) Location(fallback *time.Location) (*time.Location, error) {
	loc, err := c.Timing().Location(fallback)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return loc, nil
}

// Schedule parses the job's cron; nil when the job has none.
func (c Config) Schedule() (*cron.Schedule, error) {
	s, err := c.trigger().Schedule()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return s, nil
}

// CheckFires reports an error when the job's cron never fires after now
// (in its time zone, or fallback): Quartz refuses such a trigger ("the
// given trigger will never fire"). A job without cron passes.
func (c Config) CheckFires(now time.Time, fallback *time.Location) error {
	if err := c.checkSchedule(); err != nil {
		return err
	}
	var bad *timing.CronError
	if err := c.Timing().CheckFires(now, fallback); errors.As(err, &bad) {
		var never *cron.NeverFiresError
		if errors.As(bad.Err, &never) {
			after := ""
			if now.After(time.Unix(0, 0)) {
				after = " after " + never.After.Format("2006-01-02 15:04:05 MST")
			}
			return fmt.Errorf("%w: %scron %q never fires%s (no date matches its day-of-month, month, day-of-week and year fields); "+
				"Quartz refuses such a trigger too", ErrInvalid, cronField(c, bad.Index), never.Expr, after)
		}
		return fmt.Errorf("%w: %s%v", ErrInvalid, cronField(c, bad.Index), bad.Err)
	}
	return nil
}

// cronField names the i-th of CronList when it comes from Crons.
func cronField(c Config, i int) string {
	if strings.TrimSpace(c.Cron) != "" {
		i--
	}
	if i < 0 {
		return ""
	}
	return fmt.Sprintf("crons[%d]: ", i)
}

// MaxDescriptionBytes bounds a job's description: every listing carries
// it, so a 900 KB one slowed every page that shows the job.
const MaxDescriptionBytes = 8 << 10

// Validate checks every field and names the first bad one.
func (c Config) Validate() error {
	if err := app.ValidateName("jobName", c.JobName); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, strings.TrimPrefix(err.Error(), app.ErrInvalid.Error()+": "))
	}
	if reservedJobNames[c.JobName] {
		return fmt.Errorf("%w: jobName %q is reserved by the REST API; choose another name", ErrInvalid, c.JobName)
	}
	if len(c.Description) > MaxDescriptionBytes {
		return fmt.Errorf("%w: description is %d bytes, at most %d: keep a job's notes short (a link to longer ones)", ErrInvalid, len(c.Description), MaxDescriptionBytes)
	}
	if c.AppName == "" && c.JobType != TypeHTTP {
		return fmt.Errorf("%w: appName is required (only jobs of jobType HTTP may run without an app)", ErrInvalid)
	}
	if c.AppName != "" {
		if err := app.ValidateName("appName", c.AppName); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, strings.TrimPrefix(err.Error(), app.ErrInvalid.Error()+": "))
		}
	}
	switch c.JobExecutionType {
	case Transient, Daemon:
	default:
		return fmt.Errorf("%w: jobExecutionType must be TRANSIENT or DAEMON, got %q", ErrInvalid, c.JobExecutionType)
	}
	if err := c.CheckFires(time.Unix(0, 0), time.UTC); err != nil {
		return err
	}
	if c.JobExecutionType == Daemon && strings.TrimSpace(c.Cron) == "" {
		return fmt.Errorf("%w: cron is required for DAEMON jobs", ErrInvalid)
	}
	if c.JobExecutionType == Daemon && c.Preemptible {
		return fmt.Errorf("%w: preemptible is for TRANSIENT jobs: a DAEMON job's shards are resident processes, which a preemption would only restart", ErrInvalid)
	}
	if _, err := c.Location(time.UTC); err != nil {
		return err
	}
	if c.ShardingTotalCount < 1 {
		return fmt.Errorf("%w: shardingTotalCount must be at least 1, got %d", ErrInvalid, c.ShardingTotalCount)
	}
	if c.ShardingTotalCount > MaxShards {
		return fmt.Errorf("%w: shardingTotalCount must be at most %d, got %d", ErrInvalid, MaxShards, c.ShardingTotalCount)
	}
	if _, err := ParseShardingItemParameters(c.ShardingItemParameters, c.ShardingTotalCount); err != nil {
		return err
	}
	if err := app.ValidateResources(c.CPUCount, c.MemoryMB); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, strings.TrimPrefix(err.Error(), app.ErrInvalid.Error()+": "))
	}
	if err := c.PodTemplate.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, strings.TrimPrefix(err.Error(), app.ErrInvalid.Error()+": "))
	}
	if err := c.validateDeadlines(); err != nil {
		return err
	}
	if err := app.ValidateClusters("clusters", c.Clusters); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, strings.TrimPrefix(err.Error(), app.ErrInvalid.Error()+": "))
	}
	if c.MoveOverlapSeconds < 0 || c.MoveOverlapSeconds > MaxMoveOverlapSeconds {
		return fmt.Errorf("%w: moveOverlapSeconds must be 0 (a moved DAEMON shard stops, then starts) to %d (1 hour), got %d",
			ErrInvalid, MaxMoveOverlapSeconds, c.MoveOverlapSeconds)
	}
	if c.MoveOverlapSeconds > 0 && c.JobExecutionType != Daemon {
		return fmt.Errorf("%w: moveOverlapSeconds is for DAEMON jobs: a running TRANSIENT execution is never moved (its next fire runs on the new cluster)", ErrInvalid)
	}
	return c.validateRun()
}

// validateRun checks the job type, its props and the run settings.
func (c Config) validateRun() error {
	switch c.JobType {
	case TypeApp:
	case TypeSimple, TypeDataflow:
		if c.JobClass == "" && c.BeanName == "" {
			return fmt.Errorf("%w: jobClass cannot be empty: a %s job names its Java class (or beanName and applicationContext)", ErrInvalid, c.JobType)
		}
	case TypeScript:
		if strings.TrimSpace(c.Props["script.command.line"]) == "" {
			return fmt.Errorf("%w: props.script.command.line is required for SCRIPT jobs", ErrInvalid)
		}
	case TypeHTTP:
		if err := validateHTTPProps(c.Props); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w: jobType must be empty (the app's bootstrap script), SCRIPT, HTTP, SIMPLE or DATAFLOW, got %q", ErrInvalid, c.JobType)
	}
	if err := c.validateJava(); err != nil {
		return err
	}
	switch {
	case c.TimeoutSeconds < 0:
		return fmt.Errorf("%w: timeoutSeconds must not be negative, got %d", ErrInvalid, c.TimeoutSeconds)
	case c.MaxRetries < 0 || c.MaxRetries > MaxRetriesLimit:
		return fmt.Errorf("%w: maxRetries must be between 0 and %d, got %d", ErrInvalid, MaxRetriesLimit, c.MaxRetries)
	case c.RetryBackoffSeconds < 0 || c.RetryBackoffSeconds > MaxBackoff:
		return fmt.Errorf("%w: retryBackoffSeconds must be between 0 and %d, got %d", ErrInvalid, MaxBackoff, c.RetryBackoffSeconds)
	case c.PauseAfterFailures < 0 || c.PauseAfterFailures > MaxPauseAfter:
		return fmt.Errorf("%w: pauseAfterFailures must be between 0 (off) and %d, got %d", ErrInvalid, MaxPauseAfter, c.PauseAfterFailures)
	}
	if err := c.validateSecrets(); err != nil {
		return err
	}
	if p, ok := c.Props["sdk.protocol"]; ok && p != "line" {
		return fmt.Errorf("%w: props.sdk.protocol must be \"line\" (a resident Go SDK app, for DAEMON jobs), got %q", ErrInvalid, p)
	}
	return c.validateHandler()
}

// javaClassName is a Java binary class name: dotted identifiers, $ for
// nested classes.
var javaClassName = lazyRE(`^[\p{L}_$][\p{L}\p{N}_$]*(\.[\p{L}_$][\p{L}\p{N}_$]*)*$`)

// validateJava checks jobClass, beanName and applicationContext.
func (c Config) validateJava() error {
	if c.JobClass == "" && c.BeanName == "" && c.ApplicationContext == "" {
		return nil
	}
	if c.JobType == TypeScript || c.JobType == TypeHTTP {
		return fmt.Errorf("%w: jobClass, beanName and applicationContext name a Java job; a %s job has none", ErrInvalid, c.JobType)
	}
	if c.JobClass != "" && (len(c.JobClass) > 512 || !javaClassName().MatchString(c.JobClass)) {
		return fmt.Errorf("%w: jobClass %q is not a Java class name (e.g. com.example.MyJob)", ErrInvalid, c.JobClass)
	}
	if (c.BeanName == "") != (c.ApplicationContext == "") {
		return fmt.Errorf("%w: beanName and applicationContext go together: the bean of that Spring XML context on the app's class path", ErrInvalid)
	}
	for _, v := range []string{c.BeanName, c.ApplicationContext} {
		if len(v) > 512 || strings.ContainsAny(v, " \t\r\n\x00") {
			return fmt.Errorf("%w: beanName and applicationContext must be at most 512 characters without blanks, got %q", ErrInvalid, v)
		}
	}
	return nil
}

func (c Config) validateHandler() error {
	switch c.JobErrorHandlerType {
	case "", HandlerLog, HandlerThrow, HandlerIgnore:
		return nil
	case HandlerWebhook:
		u := c.Props["webhook.url"]
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return fmt.Errorf("%w: props.webhook.url must be an http(s) URL for the WEBHOOK error handler, got %q", ErrInvalid, u)
		}
		switch c.Props["webhook.format"] {
		case "", "generic", "dingtalk", "wechat", "slack", "feishu":
			return nil
		}
		return fmt.Errorf("%w: props.webhook.format must be generic, dingtalk, wechat, slack or feishu, got %q", ErrInvalid, c.Props["webhook.format"])
	}
	return fmt.Errorf("%w: jobErrorHandlerType must be LOG, THROW, IGNORE or WEBHOOK, got %q", ErrInvalid, c.JobErrorHandlerType)
}

// validateHTTPProps checks the props of an HTTP job.
func validateHTTPProps(p map[string]string) error {
	u := p["http.url"]
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return fmt.Errorf("%w: props.http.url must be an http(s) URL for HTTP jobs, got %q", ErrInvalid, u)
	}
	switch strings.ToUpper(p["http.method"]) {
	case "", "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD":
	default:
		return fmt.Errorf("%w: props.http.method %q is not an HTTP method", ErrInvalid, p["http.method"])
	}
	for _, k := range []string{"http.connect.timeout.milliseconds", "http.read.timeout.milliseconds"} {
		if v, ok := p[k]; ok {
			if n, err := strconv.Atoi(v); err != nil || n <= 0 {
				return fmt.Errorf("%w: props.%s must be a positive number of milliseconds, got %q", ErrInvalid, k, v)
			}
		}
	}
	return nil
}

// MaxShards bounds shardingTotalCount.
const MaxShards = 10000

// reservedJobNames would collide with fixed API paths under /api/job/.
var reservedJobNames = map[string]bool{
	"jobs": true, "tasks": true, "events": true, "statistics": true, "logs": true,
	"register": true, "update": true, "deregister": true, "trigger": true,
}

// MarshalJSON writes absent props as {} rather than null.
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config
	p := plain(c)
	if p.Props == nil {
		p.Props = map[string]string{}
	}
	return json.Marshal(p)
}
