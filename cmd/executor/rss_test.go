package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/executor"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/executor/fakeagent"
	"github.com/ejcloud/elasticjob/internal/testbin"
	"github.com/ejcloud/elasticjob/jobs"
)

// TestMeasureRSS builds the executor binary, runs it under the fake agent
// and logs its resident set size while idle and while running one task.
// It is a measurement, not an assertion: run it with
//
//	ELASTICJOB_MEASURE_RSS=1 go test -run MeasureRSS -v ./cmd/executor
func TestMeasureRSS(t *testing.T) {
	if os.Getenv("ELASTICJOB_MEASURE_RSS") == "" {
		t.Skip("set ELASTICJOB_MEASURE_RSS=1 to measure the executor's RSS")
	}
	dir, err := testbin.Commands("../..", t.TempDir(), "executor")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "executor")
	agent := fakeagent.New(true)
	defer agent.Close()
	script := filepath.Join(t.TempDir(), "run.sh")
	os.WriteFile(script, []byte("#!/bin/sh\nexec sleep 1000\n"), 0o755)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "MESOS_AGENT_ENDPOINT="+agent.Endpoint(), "MESOS_FRAMEWORK_ID=fw",
		"MESOS_EXECUTOR_ID=app@-@agent", "MESOS_SANDBOX="+t.TempDir(), "ELASTICJOB_CACHE_DIR="+t.TempDir(),
		"MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD=5secs")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	next := func(want executor.Call_Type) *executor.Call {
		for {
			select {
			case c := <-agent.Calls:
				if c.Type == want {
					return c
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("no %v", want)
			}
		}
	}
	next(executor.Call_SUBSCRIBE)
	agent.Send(fakeagent.Subscribed())
	t.Logf("idle RSS: %s", rss(t, cmd.Process.Pid))
	data := jobs.TaskData{Version: 1, ShardingContext: jobs.ShardingContext{JobName: "job", ShardingTotalCount: 1},
		App: app.Config{AppName: "app", AppURL: "file://" + script, BootstrapScript: "run.sh", AppCacheEnable: true}}.Marshal()
	agent.Send(fakeagent.Launch("t1", data))
	for c := next(executor.Call_UPDATE); c.Update.Status.GetState() != mesos.TASK_RUNNING; c = next(executor.Call_UPDATE) {
	}
	t.Logf("RSS running one task: %s", rss(t, cmd.Process.Pid))
	quick := filepath.Join(t.TempDir(), "quick.sh")
	os.WriteFile(quick, []byte("#!/bin/sh\necho run\n"), 0o755)
	daemon := jobs.TaskData{Version: 1, ShardingContext: jobs.ShardingContext{JobName: "d", TaskID: "d@-@0@-@READY@-@agent@-@u", ShardingTotalCount: 1},
		Job: jobs.Config{JobName: "d", AppName: "app", JobExecutionType: jobs.Daemon, Cron: "*/1 * * * * ?", ShardingTotalCount: 1},
		App: app.Config{AppName: "app", AppURL: "file://" + quick, BootstrapScript: "quick.sh", AppCacheEnable: true}}.Marshal()
	agent.Send(fakeagent.Launch("d@-@0@-@READY@-@agent@-@u", daemon))
	for runs := 0; runs < 6; {
		if c := next(executor.Call_MESSAGE); strings.Contains(string(c.Message.Data), "DAEMON_COMPLETE") {
			runs++
		}
	}
	t.Logf("RSS with a daemon task between runs (after 6 runs, cron every second): %s", rss(t, cmd.Process.Pid))
	agent.Send(fakeagent.Shutdown())
	if err := cmd.Wait(); err != nil {
		t.Fatalf("executor exit: %v", err)
	}
}

func rss(t *testing.T, pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmRSS:"))
		}
	}
	return "?"
}
