package runlog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
)

func TestAppendAndReadBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	term := int64(4)
	at := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	data := jobs.TaskData{Version: jobs.TaskDataVersion, ShardingContext: jobs.ShardingContext{JobName: "j", ShardingItem: 2, JobParameter: "soak 0 K"},
		ExecutionSource: jobs.SourceMisfire, Job: jobs.Config{JobName: "j", AppName: "a"}, Term: &term, Queued: at.Add(-time.Second), Nominal: at.Add(-3 * time.Second)}
	data.App.AppName = "a"
	start, err := FromTaskData("j@-@2@-@READY@-@ag@-@u", at, data.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(start); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(Line{Ev: End, At: at.Add(time.Second), Task: start.Task, State: "TASK_FINISHED"}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// a writer killed mid-line leaves a cut last line: skipped
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"ev":"start","at":"2026`)
	f.Close()
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Job != "j" || got[0].Item != 2 || *got[0].Term != 4 || !got[0].Queued.Equal(at.Add(-time.Second)) || !got[0].Nominal.Equal(at.Add(-3*time.Second)) ||
		got[0].Source != "MISFIRE" || got[0].Param != "soak 0 K" || got[1].State != "TASK_FINISHED" {
		t.Fatalf("read back %+v", got)
	}
}

func TestReadRefusesBadLines(t *testing.T) {
	for _, in := range []string{"not json\n{\"ev\":\"end\",\"task\":\"t\"}\n", `{"ev":"begin","task":"t"}` + "\n", `{"ev":"start"}` + "\n"} {
		if _, err := Read(strings.NewReader(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
	if _, err := FromTaskData("t", time.Now(), []byte("{")); err == nil {
		t.Error("bad task data: no error")
	}
}
