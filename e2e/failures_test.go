//go:build e2e

package e2e

import (
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// waitFailed waits until every shard of a triggered job has failed (the
// scheduler logs a TASK_FAILED per task) and the job is idle, and returns
// the failure lines.
func (s *scheduler) waitFailed(job string, shards int) []string {
	s.t.Helper()
	eventually(s.t, waitLong, func() bool { return len(s.failedTasks(job)) >= shards && s.idle(job) },
		"%d failed tasks of job %s and the job idle", shards, job)
	lines := s.failedTasks(job)
	for _, l := range lines {
		if !strings.Contains(l, "state=TASK_FAILED") {
			s.t.Errorf("job %s: failure line without TASK_FAILED: %s", job, l)
		}
	}
	return lines
}

// goodJobStillRuns publishes a good app and job and runs it once: the
// scheduler kept working after whatever the test did.
func (s *scheduler) goodJobStillRuns() {
	s.t.Helper()
	if !s.healthy() {
		s.t.Fatal("scheduler is no longer healthy")
	}
	out := outDir(s.t)
	s.publishApp("good_app", fileURL(recorderTGZ), "bin/record.sh", true)
	s.registerJob(recorderJob("good_job", "good_app", out, 2))
	runs := s.runAndWait("good_job", out, 2)
	if got := perItem(runs); got[0] != 1 || got[1] != 1 {
		s.t.Errorf("good job runs per item = %v, want 1 each", got)
	}
}

// Hostile archives: a ../ entry, a ../../… entry aimed at a known absolute
// path, a symlink to / followed by a file through it. Each task fails,
// nothing runs, nothing is written outside the sandbox, and the scheduler
// keeps working.
func TestHostileArchives(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, schedOpts{})
	cases := []struct {
		job, archive, why string
	}{
		{"dotdot", escapeShallow, "escapes the extraction directory"},
		{"deep", escapeDeep, "escapes the extraction directory"},
		{"symlink", symlinkEscape, "points outside the extraction directory"},
	}
	outs := map[string]string{}
	for _, c := range cases {
		outs[c.job] = outDir(t)
		s.publishApp(c.job+"_app", fileURL(c.archive), "bin/record.sh", true)
		s.registerJob(recorderJob(c.job, c.job+"_app", outs[c.job], 1))
		s.triggerToFail(c.job)
	}
	for _, c := range cases {
		lines := s.waitFailed(c.job, 1)
		if !strings.Contains(lines[0], c.why) {
			t.Errorf("%s: failure %q does not say %q", c.job, lines[0], c.why)
		}
		if n := countRuns(t, outs[c.job]); n != 0 {
			t.Errorf("%s: the job ran %d times from a hostile archive", c.job, n)
		}
	}
	for _, p := range []string{fixture(deepTarget), fixture(symlinkTarget), filepath.Join(fixtureDir, escapeName)} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("extraction escaped the sandbox: %s exists", p)
		}
	}
	_ = filepath.WalkDir(filepath.Dir(s.dataDir), func(p string, d fs.DirEntry, err error) error {
		if err == nil && (d.Name() == escapeName || d.Name() == deepTarget || d.Name() == symlinkTarget) {
			t.Errorf("extraction escaped: %s exists", p)
		}
		return nil
	})
	s.goodJobStillRuns()
}

// randomBytes is n deterministic random bytes that start with a backquote,
// as the trial's package did ("Syntax error: EOF in backquote substitution").
func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{11}).Read(b)
	b[0] = '`'
	return b
}

// A package that is neither an archive nor a script (random bytes named
// .tgz, a text file) fails its task with a cause naming the problem instead
// of being run by /bin/sh, and its upload to the scheduler is a 400 that
// stores nothing; the scheduler keeps working.
func TestNotAnArchive(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, schedOpts{})
	const want = "not a tar, tar.gz or zip archive"
	outs := map[string]string{}
	for job, pkg := range map[string]string{"random": randomTGZ, "text": textFile} {
		outs[job] = outDir(t)
		s.publishApp(job+"_app", fileURL(pkg), "bin/record.sh", true)
		s.registerJob(recorderJob(job, job+"_app", outs[job], 1))
		s.triggerToFail(job)
	}
	for job := range outs {
		lines := s.waitFailed(job, 1)
		if !strings.Contains(lines[0], want) || strings.Contains(lines[0], "Syntax error") {
			t.Errorf("%s: failure %q does not say %q", job, lines[0], want)
		}
		if n := countRuns(t, outs[job]); n != 0 {
			t.Errorf("%s: ran %d times", job, n)
		}
	}
	code, b := s.do(http.MethodPut, "/api/app/random_app/package?filename=app.tgz", randomBytes(2048))
	if code != http.StatusBadRequest || !strings.Contains(string(b), want) {
		t.Errorf("upload of random bytes = %d %s", code, b)
	}
	if ents, _ := os.ReadDir(filepath.Join(s.dataDir, "packages")); len(ents) != 0 {
		t.Errorf("a refused upload left %d entries in data_dir/packages", len(ents))
	}
	s.goodJobStillRuns()
}

// An unreachable appURL fails the task with a message naming the fetch;
// nothing runs and the scheduler stays healthy.
func TestUnreachableAppURL(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, schedOpts{})
	out := outDir(t)
	s.publishApp("far_app", unreachableURL, "bin/record.sh", true)
	s.registerJob(recorderJob("far", "far_app", out, 2))
	s.triggerToFail("far")
	for _, l := range s.waitFailed("far", 2) {
		if !strings.Contains(l, "127.0.0.1:1") {
			t.Errorf("failure does not name the URL: %s", l)
		}
	}
	if n := countRuns(t, out); n != 0 {
		t.Errorf("ran %d times without an app", n)
	}
	s.goodJobStillRuns()
}

// An app whose bootstrapScript is not in the package fails clearly.
func TestMissingBootstrapScript(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, schedOpts{})
	out := outDir(t)
	s.publishApp("noboot_app", fileURL(recorderTGZ), "bin/missing.sh", true)
	s.registerJob(recorderJob("noboot", "noboot_app", out, 1))
	s.triggerToFail("noboot")
	lines := s.waitFailed("noboot", 1)
	if !strings.Contains(lines[0], "bin/missing.sh") || !strings.Contains(lines[0], "not found") {
		t.Errorf("failure does not say the bootstrap script is missing: %s", lines[0])
	}
	if n := countRuns(t, out); n != 0 {
		t.Errorf("ran %d times", n)
	}
	s.goodJobStillRuns()
}

// A failing shard of a failover job is relaunched as a FAILOVER task and the
// job completes once it succeeds; without failover it is not relaunched.
func TestFailover(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, schedOpts{})
	s.publishApp("rec", fileURL(recorderTGZ), "bin/record.sh", true)

	out := outDir(t)
	j := recorderJob("fo_on", "rec", out, 2)
	j.Failover = true
	j.Props = map[string]string{"script.command.line": "bin/flaky.sh"}
	s.registerJob(j)
	runs := s.runAndWait("fo_on", out, 3)
	if got := perItem(runs); got[0] != 2 || got[1] != 1 {
		t.Fatalf("runs per item = %v, want shard 0 twice (fail, failover) and shard 1 once", got)
	}
	uniqueTaskIDs(t, runs)
	var shard0 []jobRun
	for _, r := range runs {
		if r.Item == 0 {
			shard0 = append(shard0, r)
		} else if r.Source != "NORMAL_TRIGGER" || !strings.Contains(r.TaskID, "@-@READY@-@") {
			t.Errorf("shard 1 run %+v, want a READY NORMAL_TRIGGER task", r)
		}
	}
	if r := shard0[0]; r.Source != "NORMAL_TRIGGER" || !strings.Contains(r.TaskID, "@-@READY@-@") {
		t.Errorf("shard 0 first run %+v, want a READY NORMAL_TRIGGER task", r)
	}
	if r := shard0[1]; r.Source != "FAILOVER" || !strings.Contains(r.TaskID, "@-@FAILOVER@-@") {
		t.Errorf("shard 0 second run %+v, want a FAILOVER task with source FAILOVER", r)
	}
	if lines := s.failedTasks("fo_on"); len(lines) != 1 || !strings.Contains(lines[0], shard0[0].TaskID) {
		t.Errorf("failed tasks of fo_on = %q, want exactly the first shard-0 task", lines)
	}

	out2 := outDir(t)
	j2 := recorderJob("fo_off", "rec", out2, 2)
	j2.Props = map[string]string{"script.command.line": "bin/flaky.sh"}
	s.registerJob(j2)
	s.triggerToFail("fo_off")
	s.waitFailed("fo_off", 1)
	// Failover work launches before ready work: once a later job has run,
	// a relaunch of the failed shard would have happened.
	witness := outDir(t)
	s.registerJob(recorderJob("witness", "rec", witness, 1))
	s.runAndWait("witness", witness, 1)
	eventually(t, waitLong, func() bool { return s.idle("fo_off") }, "fo_off idle")
	if got := perItem(runsIn(t, out2)); got[0] != 1 || got[1] != 1 {
		t.Errorf("failover=false: runs per item = %v, want each shard once (no relaunch)", got)
	}
	if f := s.failover("fo_off"); len(f) != 0 {
		t.Errorf("failover=false: failover queue %v, want empty", f)
	}
}
