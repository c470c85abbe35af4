package soak

import (
	"path/filepath"
	"strings"
)

// recordScript is the soak app's bin/run.sh on real agents: it appends a
// start line to the run log (soak/runlog's format) from what the executor
// passes it, runs 0.2-1 s, and appends its end. A DAEMON task's runs share
// its task id (the cron inside the executor): only its first is recorded,
// as a task start, and it has no end. Each line is one printf of one
// string to a file opened O_APPEND: one write(2).
func recordScript(runLog string) []byte {
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	return []byte(`#!/bin/sh
LOG=` + q(runLog) + `
DAEMONS=` + q(filepath.Join(filepath.Dir(runLog), "daemons")) + `
now() { date -u +%Y-%m-%dT%H:%M:%S.%NZ; }
if [ "$ELASTICJOB_EXECUTION_TYPE" = DAEMON ]; then
  mkdir -p "$DAEMONS"
  mkdir "$DAEMONS/$ELASTICJOB_TASK_ID" 2>/dev/null || exit 0
fi
extra=
[ -n "$ELASTICJOB_LEADER_TERM" ] && extra="$extra,\"term\":$ELASTICJOB_LEADER_TERM"
[ -n "$ELASTICJOB_QUEUED_AT" ] && extra="$extra,\"queued\":\"$ELASTICJOB_QUEUED_AT\""
[ -n "$ELASTICJOB_NOMINAL_AT" ] && extra="$extra,\"nominal\":\"$ELASTICJOB_NOMINAL_AT\""
line="{\"ev\":\"start\",\"at\":\"$(now)\",\"task\":\"$ELASTICJOB_TASK_ID\",\"job\":\"$ELASTICJOB_JOB_NAME\",\"item\":$ELASTICJOB_SHARDING_ITEM,\"source\":\"$ELASTICJOB_EXECUTION_SOURCE\",\"param\":\"$ELASTICJOB_JOB_PARAMETER\"$extra}"
printf '%s\n' "$line" >>"$LOG"
[ "$ELASTICJOB_EXECUTION_TYPE" = DAEMON ] && exit 0
sleep "0.$(( $(date +%N | cut -c1) % 8 + 2 ))"
line="{\"ev\":\"end\",\"at\":\"$(now)\",\"task\":\"$ELASTICJOB_TASK_ID\",\"state\":\"TASK_FINISHED\"}"
printf '%s\n' "$line" >>"$LOG"
`)
}
