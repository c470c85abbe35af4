//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ejcloud/elasticjob/internal/javatest"
)

// installJava puts the Java library beside the executor binary (where the
// executor finds it) and returns the test apps.
var javaOnce sync.Mutex

func installJava(t *testing.T) javatest.Built {
	t.Helper()
	b := javatest.Build(t)
	javaOnce.Lock()
	defer javaOnce.Unlock()
	dst := filepath.Join(filepath.Dir(schedulerBin), "elasticjob-cloud-executor.jar")
	if _, err := os.Stat(dst); err != nil {
		data, err := os.ReadFile(b.Lib)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst+".tmp", data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(dst+".tmp", dst); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// javaTarball packs dir (a my-job/ root) as a tar.gz fixture and returns its file URL.
func javaTarball(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "my-job")
	for rel, src := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data := []byte(src)
		mode := os.FileMode(0o755)
		if strings.HasSuffix(rel, ".jar") {
			var err error
			if data, err = os.ReadFile(src); err != nil {
				t.Fatal(err)
			}
			mode = 0o644
		}
		if err := os.WriteFile(p, data, mode); err != nil {
			t.Fatal(err)
		}
	}
	tgz := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("tar", "-czf", tgz, "-C", filepath.Dir(root), "my-job").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	return "file://" + tgz
}

// doneShards waits for one ended execution of every shard of job and returns them by item.
func (s *scheduler) doneShards(t *testing.T, job string, shards int) map[int]execution {
	t.Helper()
	byItem := map[int]execution{}
	eventually(t, waitLong, func() bool {
		var page struct {
			Rows []struct {
				execution
				CompleteTime *string `json:"completeTime"`
			} `json:"rows"`
		}
		s.getJSON("/api/job/events/executions?per_page=100&jobName="+job, &page)
		for _, e := range page.Rows {
			if e.CompleteTime != nil {
				item, _ := strconv.Atoi(strings.Split(e.TaskID, "@-@")[1])
				byItem[item] = e.execution
			}
		}
		return len(byItem) == shards
	}, "an ended execution of each of the %d shards of %s", shards, job)
	return byItem
}

// TestJavaAsTheManualWritesIt: the manual's §4.2 (MyJob, MyJobDemo, the
// tarball, the publish and register calls as printed) runs sharded with
// its parameters; a DAEMON registration of the example's daemon job keeps
// one JVM; the practice guide's jarPath + jobClass call runs the class and
// a throw is the shard's failure cause; a 2.x register body runs its
// jobClass; a tarball built against the original's jars runs unchanged.
func TestJavaAsTheManualWritesIt(t *testing.T) {
	b := installJava(t)
	s := startScheduler(t, schedOpts{})
	example := "file://" + javatest.Example(t)

	// §4.2.5 and §4.2.6 as printed (with parameters for the shards).
	s.must(http.MethodPost, "/api/app", `{"appName":"my_app","appURL":"`+example+`","cpuCount":0.1,"memoryMB":64.0,`+
		`"bootstrapScript":"bin/start.sh","appCacheEnable":true,"eventTraceSamplingCount":0}`)
	s.must(http.MethodPost, "/api/job/register", `{"jobName":"my_job","appName":"my_app","jobExecutionType":"TRANSIENT",`+
		`"cron":"0/5 * * * * * ?","shardingTotalCount":3,"cpuCount":0.1,"memoryMB":64.0,`+
		`"shardingItemParameters":"0=Beijing,1=Shanghai,2=Guangzhou","jobParameter":"day=monday"}`)
	params := []string{"Beijing", "Shanghai", "Guangzhou"}
	for item, e := range s.doneShards(t, "my_job", 3) {
		out := s.taskStdout(e.TaskID)
		want := fmt.Sprintf("MyJob shard %d of 3 parameter=%s job parameter=day=monday task=%s", item, params[item], e.TaskID)
		if !e.Success || !strings.Contains(out, want) {
			t.Fatalf("shard %d: %+v, stdout %q, want %q", item, e, out, want)
		}
	}
	s.must(http.MethodPost, "/api/job/my_job/disable", nil)

	// The daemon job, registered as the manual registers jobs: no props.
	s.must(http.MethodPost, "/api/app", appConfig{AppName: "daemon_app", AppURL: example, BootstrapScript: "bin/daemon.sh", CPUCount: 0.1, MemoryMB: 64, AppCacheEnable: true})
	s.registerJob(jobConfig{JobName: "java_daemon", AppName: "daemon_app", JobExecutionType: "DAEMON", Cron: "*/1 * * * * ?", ShardingTotalCount: 1, CPUCount: 0.1, MemoryMB: 64})
	tick := regexp.MustCompile(`MyDaemonJob tick (\d+) in pid (\d+) shard 0`)
	var task string
	var ticks [][]string
	eventually(t, waitLong, func() bool {
		if rows := s.runningRows("java_daemon"); len(rows) == 1 {
			task = rows[0].TaskID
		}
		ticks = tick.FindAllStringSubmatch(s.taskStdout(task), -1)
		return task != "" && len(ticks) >= 3
	}, "three ticks of the daemon (got %v)", late(func() any { return ticks }))
	for i, m := range ticks {
		if m[1] != strconv.Itoa(i+1) || m[2] != ticks[0][2] {
			t.Fatalf("ticks %v: not one resident JVM", ticks)
		}
	}
	pid, _ := strconv.Atoi(ticks[0][2])
	s.must(http.MethodPost, "/api/job/java_daemon/disable", nil)
	eventually(t, waitLong, func() bool { return !alive(pid) && len(s.runningRows("java_daemon")) == 0 }, "the daemon's JVM %d to end", pid)

	// The practice guide's call: jarPath (the jar) and jobClass.
	out := t.TempDir()
	s.must(http.MethodPost, "/api/jobs/register", map[string]any{
		"jobName": "data_sync_job", "jobClass": "ejtest.MyJob", "cron": "", "shardingTotalCount": 2,
		"shardingItemParameters": "0=ok,1=fail", "jobParameter": out, "cpuCount": 0.1, "memoryMB": 64,
		"jarPath": "file://" + b.AppJar,
	})
	s.must(http.MethodPost, "/api/jobs/data_sync_job/start", nil)
	shards := s.doneShards(t, "data_sync_job", 2)
	if !shards[0].Success || !strings.HasPrefix(readLog(t, out, 0), "0 ok 2 data_sync_job@-@0@-@READY@-@") {
		t.Fatalf("shard 0: %+v, recorded %q", shards[0], readLog(t, out, 0))
	}
	cause := regexp.MustCompile(`java.lang.IllegalStateException: no rows for shard 1\n\tat ejtest.MyJob.execute\(MyJob.java:\d+\)`)
	if f := shards[1]; f.Success || f.FailureCause == nil || !cause.MatchString(*f.FailureCause) {
		t.Fatalf("shard 1: %+v (cause %v)", f, late(func() any { return *f.FailureCause }))
	}

	// A 2.x register body (strings for numbers and booleans) naming a 2.x jobClass.
	legacy := javaTarball(t, "legacy.tar.gz", map[string]string{
		"bin/start.sh": "#!/bin/sh\ncd \"$(dirname \"$0\")/..\"\nexec java -cp \"lib/*\" ejtest.LegacyMain\n", "lib/ejtest.jar": b.AppJar})
	s.publishApp("legacy_app", legacy, "bin/start.sh", true)
	out2 := t.TempDir()
	s.must(http.MethodPost, "/api/job/register", `{"jobName":"legacy_job","appName":"legacy_app","jobType":"SIMPLE","jobClass":"ejtest.LegacyJob",`+
		`"cron":"","shardingTotalCount":"2","shardingItemParameters":"0=a,1=b","jobParameter":"`+out2+`","failover":"false","misfire":"false",`+
		`"cpuCount":"0.1","memoryMB":"64","jobExecutionType":"TRANSIENT","jobProperties":{"job_exception_handler":"x"},"bootstrapScript":"bin/start.sh"}`)
	s.trigger("legacy_job")
	for item, e := range s.doneShards(t, "legacy_job", 2) {
		if l := readLog(t, out2, item); !e.Success || !strings.HasSuffix(l, " 2.x\n") {
			t.Fatalf("legacy shard %d: %+v recorded %q", item, e, l)
		}
	}

	// The unchanged tarball: lib/ holds the original's elasticjob-cloud-executor.
	orig := map[string]string{"bin/start.sh": javatest.StartScript}
	jars, _ := filepath.Glob(filepath.Join(b.OriginalApp, "lib", "*.jar"))
	for _, j := range jars {
		orig["lib/"+filepath.Base(j)] = j
	}
	s.publishApp("orig_app", javaTarball(t, "my-job.tar.gz", orig), "bin/start.sh", true)
	out3 := t.TempDir()
	s.registerJob(jobConfig{JobName: "orig_job", AppName: "orig_app", JobExecutionType: "TRANSIENT", ShardingTotalCount: 3,
		ShardingItemParameters: "0=x,1=y,2=z", JobParameter: out3, CPUCount: 0.1, MemoryMB: 64})
	s.trigger("orig_job")
	for item, e := range s.doneShards(t, "orig_job", 3) {
		if l := readLog(t, out3, item); !e.Success || !strings.HasPrefix(l, fmt.Sprintf("%d %s 3 orig_job@-@%d@-@", item, "xyz"[item:item+1], item)) || !strings.HasSuffix(l, " original\n") {
			t.Fatalf("original shard %d: %+v recorded %q", item, e, l)
		}
	}

	var types map[string]int
	s.getJSON("/api/job/statistics/jobs/type", &types)
	if types["simpleJobCount"] != 5 || types["dataflowJobCount"] != 0 || types["scriptJobCount"] != 0 {
		t.Errorf("jobs/type: %v", types)
	}
}

func readLog(t *testing.T, dir string, item int) string {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(dir, strconv.Itoa(item)+".log"))
	return string(b)
}
