package mesos

import (
	"context"
	"errors"
	"log/slog"
	"os/user"
	"strings"
	"time"
)

// Sentinel errors. Call errors wrap them with the operation.
var (
	// ErrNotSubscribed is returned by calls made while there is no live subscription.
	ErrNotSubscribed = errors.New("mesos: not subscribed")
	// ErrUnknownOffer is returned by Accept and Decline for an offer id the client does not hold
	// (never received, already used, rescinded, or voided by a disconnection).
	ErrUnknownOffer = errors.New("mesos: unknown offer")
	// ErrInsufficient is returned by Accept when the offers cannot cover the launches.
	ErrInsufficient = errors.New("mesos: offers do not cover the launches")
	// ErrHeartbeat marks a stream torn down because heartbeats stopped arriving.
	ErrHeartbeat = errors.New("mesos: heartbeat timeout")
	// ErrMasterError marks a stream ended by an ERROR event from the master.
	ErrMasterError = errors.New("mesos: master sent ERROR")
	// ErrRefused marks a SUBSCRIBE the master refused for authentication (401) or authorization
	// (403): retrying at once cannot help, so the client waits BackoffMax between attempts.
	ErrRefused = errors.New("mesos: master refused the framework")
	// ErrLeaderMoved marks a stream dropped because the detector saw another master take the lead.
	ErrLeaderMoved = errors.New("mesos: leading master changed")
)

// Defaults applied by New for zero Config fields.
const (
	DefaultRole            = "*"
	DefaultFailoverTimeout = 7 * 24 * time.Hour
	DefaultBackoffMin      = 100 * time.Millisecond
	DefaultBackoffMax      = 10 * time.Second
	DefaultHeartbeatGrace  = 2
	DefaultRefuseSeconds   = 5.0
	schedulerPath          = "/api/v1/scheduler"
)

// Config configures a Client. Zero fields take the documented defaults.
type Config struct {
	// URL is the master base URL, e.g. http://127.0.0.1:5050; calls go to URL+"/api/v1/scheduler".
	// It is ignored when Detector is set.
	URL string
	// Detector, when set, names the leading master before every subscription and tells the client
	// when leadership moves (see engine/mesos/detector for zk:// URLs).
	Detector Detector
	// FrameworkName (default "elasticjob-cloud"), User (default: the current OS user),
	// Role (default "*"), Hostname and Principal go into FrameworkInfo.
	FrameworkName, User, Role, Hostname, Principal string
	// Secret, with Principal, is sent as HTTP Basic authentication on every call to the master.
	Secret string
	// FrameworkID is the persisted id to re-subscribe with ("" = new framework).
	FrameworkID string
	// FailoverTimeout is how long Mesos keeps the tasks of a disconnected scheduler (default 7 days).
	FailoverTimeout time.Duration
	// NoCheckpoint turns FrameworkInfo.checkpoint off. Checkpointing is on by default: agents
	// then write the framework's tasks to disk, so an agent restart recovers them instead of
	// killing them.
	NoCheckpoint bool
	// BackoffMin and BackoffMax bound the jittered re-subscribe backoff (default 100ms..10s).
	BackoffMin, BackoffMax time.Duration
	// HeartbeatGrace is the number of missed heartbeats tolerated (default 2): the stream counts as
	// lost after (HeartbeatGrace+1) heartbeat intervals without an event.
	HeartbeatGrace int
	// RefuseSeconds is the filter of Accept and Decline when the call passes 0 (default 5).
	RefuseSeconds float64
	Logger        *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Role == "" {
		c.Role = DefaultRole
	}
	if c.User == "" {
		c.User = currentUser()
	}
	if c.FrameworkName == "" {
		c.FrameworkName = "elasticjob-cloud"
	}
	if c.FailoverTimeout <= 0 {
		c.FailoverTimeout = DefaultFailoverTimeout
	}
	if c.BackoffMin <= 0 {
		c.BackoffMin = DefaultBackoffMin
	}
	if c.BackoffMax < c.BackoffMin {
		c.BackoffMax = max(DefaultBackoffMax, c.BackoffMin)
	}
	if c.HeartbeatGrace <= 0 {
		c.HeartbeatGrace = DefaultHeartbeatGrace
	}
	if c.RefuseSeconds <= 0 {
		c.RefuseSeconds = DefaultRefuseSeconds
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Detector == nil {
		c.Detector = static(strings.TrimRight(c.URL, "/"))
	}
	return c
}

func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "root"
}

// Detector finds the leading master.
type Detector interface {
	// Leader blocks until a leading master is known and returns its base URL (http://host:port)
	// and a channel closed when leadership moves away from it (nil: it never moves).
	Leader(ctx context.Context) (string, <-chan struct{}, error)
}

// static is the Detector of a fixed master URL.
type static string

func (s static) Leader(context.Context) (string, <-chan struct{}, error) { return string(s), nil, nil }
