package executor

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/ejcloud/elasticjob/executor/extract"
	"github.com/ejcloud/elasticjob/executor/fetch"
)

// Main is the executor command: it parses args and env (KEY=VALUE pairs),
// prints help to stdout, logs to stderr, and serves until SHUTDOWN, ctx end
// or loss of the agent.
func Main(ctx context.Context, args, env []string, stdout, stderr io.Writer) error {
	getenv := lookup(env)
	// The agent's token for this executor: sent on its calls, kept from
	// its tasks (their environment starts from env) and from this
	// process's later children, and this process made unreadable to
	// them (tokenguard).
	token := getenv(TokenEnv)
	env = withoutVar(env, TokenEnv)
	_ = os.Unsetenv(TokenEnv)
	guardToken(token)
	s, err := ParseSettings(args, getenv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: s.LogLevel})).With("executor", s.ExecutorID)
	if err := os.MkdirAll(s.CacheDir, 0o755); err != nil {
		return err
	}
	pipeline := &Pipeline{
		Fetcher: &fetch.Fetcher{
			CacheDir: s.CacheDir, ScratchDir: filepath.Join(s.Sandbox, "fetch"),
			MaxSize: s.MaxDownload, Timeout: s.FetchTimeout, Log: log.With("subsystem", "fetch"),
			MaxCacheBytes: s.CacheMaxSize,
		},
		Limits:  extract.Limits{MaxBytes: s.MaxExtracted, MaxEntries: s.MaxEntries},
		Sandbox: s.Sandbox, Env: env, Grace: s.KillGrace, Log: log.With("subsystem", "task"),
		TaskGC:  &TaskGC{Delay: s.GCDelay, Headroom: s.GCDiskHeadroom},
		Secrets: SecretsClient{ExecutorToken: token},
	}
	if pipeline.Java, err = javaOf(s.JavaJar, s.JavaOpts); err != nil {
		return err
	}
	if s.Cgroup != "" {
		tc, err := OpenTaskCgroups(s.Cgroup, s.CgroupPidsMax, s.CgroupCPUQuota, log.With("subsystem", "cgroups"))
		if err != nil {
			log.Warn("tasks run without cgroups of their own", "cgroup", s.Cgroup, "err", err)
		} else {
			pipeline.Cgroups = tc
		}
	}
	if r, err := StartReaper(log.With("subsystem", "reaper")); err != nil {
		log.Warn("no reaper: job processes may outlive a killed executor", "err", err)
	} else {
		pipeline.Groups = r
		defer r.Close()
	}
	ex := New(NewHTTPAgent(s.AgentEndpoint, s.FrameworkID, s.ExecutorID, token, s.Protobuf), pipeline, Options{
		FrameworkID: s.FrameworkID, ExecutorID: s.ExecutorID,
		KillGrace: s.KillGrace, ShutdownGrace: s.ShutdownGrace, RecoveryTimeout: s.RecoveryTimeout,
		BackoffMax: s.BackoffMax, AckTimeout: s.AckTimeout, IdleTimeout: s.IdleTimeout, Log: log.With("subsystem", "mesos"),
		Refuse: confinement(getenv),
	})
	log.Info("executor starting", "agent", s.AgentEndpoint, "sandbox", s.Sandbox, "cache", s.CacheDir, "javaJar", pipeline.Java.Jar)
	return ex.Run(ctx)
}

// javaOf finds the Java library: the configured one, else beside this
// binary, else in the image.
func javaOf(configured string, opts []string) (Java, error) {
	dir := ""
	if exe, err := os.Executable(); err == nil {
		dir = filepath.Dir(exe)
	}
	jar, err := FindJavaJar(configured, dir)
	return Java{Jar: jar, Opts: opts}, err
}

func lookup(env []string) func(string) string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return func(k string) string { return m[k] }
}
