// Package executor is the ElasticJob-Cloud Mesos executor: a v1 HTTP
// executor (through mesos-go's httpcli/httpexec; JSON, or protobuf when the
// agent asks for it with ELASTICJOB_AGENT_CODEC, as the embedded one does,
// which also takes the updates that queued behind one in flight in one
// request: BatchAgent) that runs every task of one app on one agent.
//
// The Mesos side (Executor: loop.go, events.go, updates.go) subscribes to
// the agent, re-subscribes with backoff after a disconnection (sending the
// unacknowledged tasks and updates), and gives up after the recovery
// timeout, killing its tasks. LAUNCH hands the task to a Runner in its own
// goroutine and sends TASK_STARTING only if the task has not started within
// Options.StartingAfter (100ms: a task whose app is cached goes from STAGING
// straight to RUNNING); KILL cancels it (SIGTERM to the process
// group, SIGKILL after the grace period). On SHUTDOWN (or SIGTERM from the
// agent) it kills every task and exits as soon as the agent has accepted
// (202) their final updates — acknowledgements may never come when the
// scheduler is stopping too — or after min(AckTimeout, ShutdownGrace/2).
// An executor that goes idle (no task at all; a DAEMON task counts as a
// task) exits after the idle timeout, once every update is acknowledged.
//
// TASK_RUNNING and terminal updates carry a Report in TaskStatus.data
// (hostname, ip, startTime, completeTime, exitCode): the scheduler writes
// the execution log from it (history/trace). TASK_RUNNING also carries
// launchTime (the LAUNCH arrived) and, for a forked process, forkTime (its
// start began): the scheduler's launch-path stage metrics. The executor never talks to
// the history database, so no database credentials reach agents.
//
// The task side (Pipeline) knows nothing of Mesos. Per task it prepares the
// job by its jobType and runs it once (TRANSIENT) or on its cron (DAEMON):
//
//   - "" (the default): fetch the app (package fetch), extract it (package
//     extract) and run its bootstrap script (package process); the first
//     word is a path in the app root, the other words its arguments.
//     props["script.command.line"], when set, is run instead (as before
//     job types existed).
//   - SCRIPT: props["script.command.line"] run as
//     /bin/sh -c '<line> "$@"' sh '<context JSON>': shell syntax works as
//     written and the JSON is the last argument of the line's last command
//     (see scriptLine for the edge cases). The app is still fetched and
//     extracted when it has an appURL, and the line runs in its root, so a
//     script may live in the app.
//   - HTTP: no fetch, no process: one request per run to props http.url
//     with http.method (GET), http.data as the body of POST/PUT/PATCH,
//     Content-Type http.content.type, connect/read timeouts
//     http.connect.timeout.milliseconds (3000) and
//     http.read.timeout.milliseconds (5000, for the headers and for each
//     read of the body), the sharding context JSON in the shardingContext
//     header. 2xx is a success; anything else fails with "http POST <url>:
//     503 Service Unavailable: <first 256 bytes of the body>". The body goes
//     to the task's stdout, a summary line to its stderr.
//
// Every run honours the job's timeoutSeconds (killed like a KILL, or the
// request cancelled: "timed out after 5s") and jobErrorHandlerType: IGNORE
// reports a failed run as a success with the message "ignored failure:
// <cause>"; LOG, THROW and WEBHOOK (sent by the scheduler) leave a failure a
// failure. Preparation failures (fetch, extract) are never ignored.
//
// A DAEMON task (daemon.go) sends TASK_RUNNING once prepared and runs the
// job on its cron, in the job's time zone (default: the executor's), with
// an injected clock. Runs never overlap: a fire during a run is skipped,
// or with misfire=true queued to run right after it (at most one, source
// MISFIRE). Each run is reported to the scheduler as a framework MESSAGE
// (jobs.DaemonReport) DAEMON_BEGIN before it and DAEMON_COMPLETE after it
// (success, message), and appends to the task's stdout and stderr after a
// line "--- elasticjob daemon run N (SOURCE) at TIME ---". A KILL ends the
// cron and the run in progress: TASK_KILLED. Without the SDK protocol each
// run forks a new process; with props sdk.protocol=line (resident.go) the
// app's process is started once per task with ELASTICJOB_DAEMON_PROTOCOL=1
// and driven over the line protocol of package sdk on fds 3 and 4 (RUN,
// CANCEL / DONE); a process that dies is started again at the next run, and
// one that ignores CANCEL at its timeout is killed.
//
// Java apps (java.go) are told without a flag: a bootstrap script or
// command line that runs java, an app holding jars, a jar bootstrap (run
// by java -jar, or, when the job names its jobClass, by the Java library's
// runner), or a job that names a class. The Java library
// (elasticjob-cloud-executor.jar, sdk/java: the original's public API) is
// put ahead of the app's classes: with -Xbootclasspath/a for java -jar and
// (through JAVA_TOOL_OPTIONS) for a JVM the app's script starts, first on
// the class path for the runner's JVM; so tarballs built against the
// original's jars run unchanged; the job's props, class and
// bean go to the JVM in ELASTICJOB_JOB_* variables. A DAEMON Java job is
// resident without sdk.protocol=line: its JVM starts at the first tick and
// speaks the line protocol; one that never does runs once per tick. A
// process may write its failure cause to $ELASTICJOB_CAUSE_FILE, reported
// instead of its stderr tail.
//
// Isolation (isolation.go): when the agent put the executor in a cgroup
// container (ELASTICJOB_CGROUP, the embedded agent), each task runs in a
// child cgroup of its own with the task's memory, CPU and process-count
// limits (TaskCgroups); a task the OOM killer hit fails with "memory limit
// of N MB exceeded: …", and whatever the task leaves in its cgroup is
// killed when it ends. TaskGC removes old directories of finished tasks
// from the sandbox of a long-lived executor (package sandboxgc's rule).
//
// Sandbox layout ($MESOS_SANDBOX):
//
//	apps/<sha256 prefix>/     the unpacked app, shared by tasks with the same package
//	tasks/<taskId>/stdout     the task's output (every run of a daemon task)
//	tasks/<taskId>/stderr
//	fetch/                    scratch downloads when appCacheEnable is false
//
// The app root is the extraction directory, or its single top-level
// directory when the bootstrap script is not found at the top but is found
// inside that directory (packages laid out as my-job/bin/start.sh). The
// sharding context JSON is the last argument and the environment carries
// ELASTICJOB_JOB_NAME, ELASTICJOB_TASK_ID, ELASTICJOB_SHARDING_TOTAL_COUNT,
// ELASTICJOB_SHARDING_ITEM, ELASTICJOB_SHARDING_PARAMETER,
// ELASTICJOB_JOB_PARAMETER, ELASTICJOB_SHARDING_CONTEXT,
// ELASTICJOB_EXECUTION_SOURCE (per run), ELASTICJOB_EXECUTION_TYPE,
// ELASTICJOB_STREAMING_PROCESS (props streaming.process, for the SDK),
// and, when the payload carries them, ELASTICJOB_LEADER_TERM,
// ELASTICJOB_QUEUED_AT and ELASTICJOB_NOMINAL_AT (the launching term, when
// the execution was queued, the cron instant it serves).
package executor
