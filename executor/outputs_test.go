package executor

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
)

// scriptWithInputs is a SCRIPT job's payload whose sharding context holds inputs.
func scriptWithInputs(line string, in jobs.Inputs) []byte {
	cfg := jobs.Config{JobName: "job", AppName: "app", ShardingTotalCount: 1, JobType: jobs.TypeScript,
		JobExecutionType: jobs.Transient, Props: map[string]string{"script.command.line": line}}
	return jobs.TaskData{
		Version:         jobs.TaskDataVersion,
		ShardingContext: jobs.ShardingContext{JobName: "job", TaskID: taskID, ShardingTotalCount: 1, Inputs: in},
		ExecutionSource: jobs.SourceNormal, Job: cfg, App: app.Config{AppName: "app"},
	}.Marshal()
}

func TestOutputsAreReportedAndInputsReachTheJob(t *testing.T) {
	p := newPipeline(t)
	line := `printf 'rows=%s\n# comment\n\nkey with spaces = a=b \n' "$ELASTICJOB_INPUT_EXTRACT_ROW_COUNT" > "$ELASTICJOB_OUTPUT"; ` +
		`printf '%s|%s' "$ELASTICJOB_INPUT_EXTRACT_ROW_COUNT" "$ELASTICJOB_INPUT_X_Y_A_B_C"; printf '|%s' `
	out, _ := runTask(t, p, scriptWithInputs(line, jobs.Inputs{"extract": {"row-count": "42"}, "x.y": {"a b.c": "v"}}))
	if out.State != Finished {
		t.Fatalf("%+v stderr %q", out, stderrOf(t, p))
	}
	want := map[string]string{"rows": "42", "key with spaces": " a=b "}
	if !reflect.DeepEqual(out.Outputs, want) {
		t.Fatalf("outputs %q, want %q", out.Outputs, want)
	}
	got := stdout(t, p)
	if !strings.HasPrefix(got, `42|v|{`) || !strings.Contains(got, `"inputs":{"extract":{"row-count":"42"},"x.y":{"a b.c":"v"}}`) {
		t.Fatalf("the job saw %q", got)
	}
}

func TestBadOutputFailsTheRun(t *testing.T) {
	cases := map[string]struct{ line, want string }{
		"not key=value": {`echo 'just words' > "$ELASTICJOB_OUTPUT" #`, `line 1 of the ELASTICJOB_OUTPUT file is not key=value: "just words"`},
		"too large":     {`head -c 70000 /dev/zero | tr '\0' 'x' | sed 's/^/k=/' > "$ELASTICJOB_OUTPUT" #`, "the ELASTICJOB_OUTPUT file holds 70002 bytes, more than the 65536 bytes allowed"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := newPipeline(t)
			out, _ := runTask(t, p, scriptWithInputs(tc.line, nil))
			if out.State != Failed || !strings.Contains(out.Message, tc.want) || out.Outputs != nil {
				t.Fatalf("%+v, want a failure saying %q", out, tc.want)
			}
		})
	}
}

func TestFailedRunKeepsItsMessageAndOutputs(t *testing.T) {
	p := newPipeline(t)
	out, _ := runTask(t, p, scriptWithInputs(`echo k=v > "$ELASTICJOB_OUTPUT"; exit 3`, nil))
	if out.State != Failed || !strings.Contains(out.Message, "exit code 3") || out.Outputs["k"] != "v" {
		t.Fatalf("%+v", out)
	}
}

func TestNoOutputFileNoOutputs(t *testing.T) {
	p := newPipeline(t)
	out, _ := runTask(t, p, scriptWithInputs(`true`, nil))
	if out.State != Finished || out.Outputs != nil {
		t.Fatalf("%+v", out)
	}
}
