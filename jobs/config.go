package jobs

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs/cron"
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
	JobName                string            `json:"jobName"`
	AppName                string            `json:"appName"`
	JobExecutionType       ExecutionType     `json:"jobExecutionType"`
	Cron                   string            `json:"cron"`
	TimeZone               string            `json:"timeZone,omitempty"`
	ShardingTotalCount     int               `json:"shardingTotalCount"`
	ShardingItemParameters string            `json:"shardingItemParameters"`
	JobParameter           string            `json:"jobParameter"`
	CPUCount               float64           `json:"cpuCount"`
	MemoryMB               float64           `json:"memoryMB"`
	Failover               bool              `json:"failover"`
	Misfire                bool              `json:"misfire"`
	Description            string            `json:"description"`
	Props                  map[string]string `json:"props"`
	// Accepted for compatibility with the original's job config; stored and
	// shown, with no effect on scheduling.
	JobExecutorServiceHandlerType string `json:"jobExecutorServiceHandlerType,omitempty"`
	JobErrorHandlerType           string `json:"jobErrorHandlerType,omitempty"`
}

// Default returns a Config holding the defaults; decode a request body into
// it so that absent fields keep their defaults.
func Default() Config {
	return Config{JobExecutionType: Transient, ShardingTotalCount: 1, CPUCount: 1, MemoryMB: 128, Props: map[string]string{}}
}

// Location returns the job's time zone, or fallback when none is set.
func (c Config) Location(fallback *time.Location) (*time.Location, error) {
	if c.TimeZone == "" {
		return fallback, nil
	}
	loc, err := time.LoadLocation(c.TimeZone)
	if err != nil {
		return nil, fmt.Errorf("%w: timeZone %q is not an IANA time zone name", ErrInvalid, c.TimeZone)
	}
	return loc, nil
}

// Schedule parses the job's cron; nil when the job has none.
func (c Config) Schedule() (*cron.Schedule, error) {
	if strings.TrimSpace(c.Cron) == "" {
		return nil, nil
	}
	s, err := cron.Parse(c.Cron)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return s, nil
}

// Validate checks every field and names the first bad one.
func (c Config) Validate() error {
	if err := app.ValidateName("jobName", c.JobName); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, strings.TrimPrefix(err.Error(), app.ErrInvalid.Error()+": "))
	}
	if reservedJobNames[c.JobName] {
		return fmt.Errorf("%w: jobName %q is reserved by the REST API; choose another name", ErrInvalid, c.JobName)
	}
	if err := app.ValidateName("appName", c.AppName); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, strings.TrimPrefix(err.Error(), app.ErrInvalid.Error()+": "))
	}
	switch c.JobExecutionType {
	case Transient, Daemon:
	default:
		return fmt.Errorf("%w: jobExecutionType must be TRANSIENT or DAEMON, got %q", ErrInvalid, c.JobExecutionType)
	}
	if _, err := c.Schedule(); err != nil {
		return err
	}
	if c.JobExecutionType == Daemon && strings.TrimSpace(c.Cron) == "" {
		return fmt.Errorf("%w: cron is required for DAEMON jobs", ErrInvalid)
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
	if c.CPUCount < 0.001 {
		return fmt.Errorf("%w: cpuCount must be at least 0.001, got %v", ErrInvalid, c.CPUCount)
	}
	if c.MemoryMB < 1 {
		return fmt.Errorf("%w: memoryMB must be at least 1, got %v", ErrInvalid, c.MemoryMB)
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
