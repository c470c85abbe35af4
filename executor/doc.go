// Package executor is the ElasticJob-Cloud Mesos executor: a v1 HTTP
// executor (JSON codec, through mesos-go's httpcli/httpexec) that runs every
// task of one app on one agent.
//
// The Mesos side (Executor: loop.go, events.go, updates.go) subscribes to
// the agent, re-subscribes with backoff after a disconnection (sending the
// unacknowledged tasks and updates), and gives up after the recovery
// timeout, killing its tasks. LAUNCH sends TASK_STARTING and hands the task
// to a Runner in its own goroutine; KILL cancels it (SIGTERM to the process
// group, SIGKILL after the grace period); SHUTDOWN kills every task and the
// executor exits once its last updates are acknowledged or AckTimeout ends.
//
// TASK_RUNNING and terminal updates carry a Report in TaskStatus.data
// (hostname, ip, startTime, completeTime, exitCode): the scheduler writes
// the execution log from it (scheduler/trace). The executor never talks to
// the history database, so no database credentials reach agents.
//
// The task side (Pipeline) knows nothing of Mesos: fetch the app (package
// fetch), extract it (package extract), run it (package process).
//
// Sandbox layout ($MESOS_SANDBOX):
//
//	apps/<sha256 prefix>/     the unpacked app, shared by tasks with the same package
//	tasks/<taskId>/stdout     the task's output
//	tasks/<taskId>/stderr
//	fetch/                    scratch downloads when appCacheEnable is false
//
// The app root is the extraction directory, or its single top-level
// directory when the bootstrap script is not found at the top but is found
// inside that directory (packages laid out as my-job/bin/start.sh). The
// command is props["script.command.line"] run by /bin/sh -c, or else the
// bootstrap script (first word a path in the app root, the other words its
// arguments); either way the sharding context JSON is the last argument and
// the environment carries ELASTICJOB_JOB_NAME, ELASTICJOB_TASK_ID,
// ELASTICJOB_SHARDING_TOTAL_COUNT, ELASTICJOB_SHARDING_ITEM,
// ELASTICJOB_SHARDING_PARAMETER, ELASTICJOB_JOB_PARAMETER,
// ELASTICJOB_SHARDING_CONTEXT and ELASTICJOB_EXECUTION_SOURCE.
package executor
