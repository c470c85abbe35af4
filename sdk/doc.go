// Package sdk is the Go SDK for ElasticJob-Cloud job authors: implement
// SimpleJob (or DataflowJob) and hand it to Run from main.
//
//	func main() { sdk.Run(myJob{}) }
//
//	type myJob struct{}
//
//	func (myJob) Execute(ctx context.Context, sc sdk.ShardingContext) error {
//		log.Printf("shard %d of %d: %s", sc.ShardingItem, sc.ShardingTotalCount, sc.ShardingParameter)
//		return nil
//	}
//
// Build the program into the app's tarball (e.g. bin/my-app) and publish the
// app with bootstrapScript "bin/my-app".
//
// # Run once
//
// For TRANSIENT jobs (and DAEMON jobs without the line protocol) the
// executor starts the program once per run with the sharding context as the
// last argument and in ELASTICJOB_SHARDING_CONTEXT (plus the other
// ELASTICJOB_* variables). Run calls Execute once and exits 0, or 1 with
// "error: <message>" on stderr (2 when there is no sharding context).
// SIGTERM (a kill, or the job's timeoutSeconds) cancels Execute's context.
//
// # Resident (DAEMON jobs with props sdk.protocol=line)
//
// A DAEMON job whose props hold "sdk.protocol": "line" keeps one process per
// task: the executor starts the program once, with
// ELASTICJOB_DAEMON_PROTOCOL=1, and sends it a line per cron fire instead of
// forking a process, so connection pools, caches and other state survive
// from run to run. Runs never overlap. The protocol is UTF-8 lines ending in
// "\n" on two pipes, never on stdout or stderr, so nothing the job prints can
// corrupt it (stdout and stderr go to the task's log files as usual):
//
//	fd 3, executor → job:
//	  RUN <runId> <shardingContext JSON>    run the job once
//	  CANCEL <runId>                        the run's time is up: cancel its context
//	  end of file                           stop: cancel the run in progress, answer it, exit 0
//	fd 4, job → executor:
//	  DONE <runId> ok                       the run succeeded
//	  DONE <runId> error <message>          it failed; the message on one line,
//	                                        with \ → \\, newline → \n, CR → \r
//
// runId is a token without spaces ("1", "2", … per task). The JSON is the
// sharding context as handed to transient runs:
// {"jobName","taskId","shardingTotalCount","jobParameter","shardingItem","shardingParameter"}.
// Each RUN is answered by exactly one DONE with its runId, also after a
// CANCEL (a late DONE of a cancelled run is ignored by the executor). A RUN
// arriving while a run is in progress is answered at once with an error.
// If the job does not answer a CANCEL within the executor's kill grace
// period, the executor kills the process (SIGTERM, then SIGKILL) and starts
// a new one for the next run; likewise when the process exits on its own.
// SIGTERM cancels the run in progress; the process answers it and exits.
// The SDK sets fds 3 and 4 close-on-exec, so programs the job starts do not
// inherit them. Programs in other languages can implement the same
// protocol; FormatRun, FormatCancel, FormatDone, ParseDone, Escape and
// Unescape define the exact lines.
//
// # Dataflow jobs
//
// Dataflow adapts a DataflowJob[T]: each run fetches items and processes
// them; with the job's props streaming.process=true (the executor exports
// ELASTICJOB_STREAMING_PROCESS=true) it fetches and processes repeatedly
// until a fetch returns no items, an error occurs or the run is cancelled.
package sdk
