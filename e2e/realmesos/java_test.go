//go:build e2e

package realmesos

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/internal/javatest"
)

// TestJavaOnRealMesos: on a real Mesos agent, the agent fetches the Java library with the
// executor from the scheduler; the manual's MyJob (examples/java, its start script and
// tarball) runs sharded with its parameters, and the practice guide's jarPath + jobClass
// call runs the class, a throw failing its shard with the exception as the cause.
func TestJavaOnRealMesos(t *testing.T) {
	requireMesos(t)
	b := javatest.Build(t)
	jar, err := os.ReadFile(b.Lib)
	if err != nil {
		t.Fatal(err)
	}
	// Beside the executor the scheduler serves to agents: it serves the library too.
	if err := os.WriteFile(filepath.Join(filepath.Dir(executorBin), "elasticjob-cloud-executor.jar"), jar, 0o644); err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(javatest.Example(t))
	if err != nil {
		t.Fatal(err)
	}
	appJar, err := os.ReadFile(b.AppJar)
	if err != nil {
		t.Fatal(err)
	}
	apps.mu.Lock()
	apps.files["/my-job.tar.gz"], apps.files["/jobs/data-sync-job-1.0.jar"] = example, appJar
	apps.mu.Unlock()

	m := startMesos(t, mesosOpts{})
	s := startSchedulers(t, 1, schedOpts{mesosURL: m.masterURL()})[0]
	s.must(http.MethodPost, "/api/app", `{"appName":"my_app","appURL":"`+appServer.URL+`/my-job.tar.gz","cpuCount":0.1,"memoryMB":64.0,`+
		`"bootstrapScript":"bin/start.sh","appCacheEnable":true,"eventTraceSamplingCount":0}`)
	s.must(http.MethodPost, "/api/job/register", `{"jobName":"my_job","appName":"my_app","jobExecutionType":"TRANSIENT",`+
		`"cron":"","shardingTotalCount":3,"cpuCount":0.1,"memoryMB":64.0,"shardingItemParameters":"0=Beijing,1=Shanghai,2=Guangzhou"}`)
	s.trigger("my_job")
	ended := func(job string, n int) []execution {
		var out []execution
		eventually(t, waitLong, func() bool {
			out = nil
			for _, e := range s.executions(job) {
				if e.CompleteTime != "" {
					out = append(out, e)
				}
			}
			return len(out) == n
		}, "%d ended executions of %s", n, job)
		return out
	}
	params := []string{"Beijing", "Shanghai", "Guangzhou"}
	for _, e := range ended("my_job", 3) {
		var chunk struct{ Data string }
		if err := json.Unmarshal(s.must(http.MethodGet, "/api/job/logs/"+e.TaskID+"?format=json", nil), &chunk); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("MyJob shard %d of 3 parameter=%s", e.ShardingItem, params[e.ShardingItem])
		if !e.Success || !strings.Contains(chunk.Data, want) {
			t.Fatalf("%+v: stdout %q, want %q", e, chunk.Data, want)
		}
	}

	out := outDir(t)
	s.must(http.MethodPost, "/api/jobs/register", map[string]any{"jobName": "data_sync_job", "jobClass": "ejtest.MyJob",
		"shardingTotalCount": 2, "shardingItemParameters": "0=ok,1=fail", "jobParameter": out, "cpuCount": 0.1, "memoryMB": 64,
		"jarPath": appServer.URL + "/jobs/data-sync-job-1.0.jar"})
	s.must(http.MethodPost, "/api/jobs/data_sync_job/start", nil)
	var causes []string
	for _, e := range ended("data_sync_job", 2) {
		var detail struct {
			FailureCause string `json:"failureCause"`
		}
		if err := json.Unmarshal(s.must(http.MethodGet, "/api/job/tasks/"+e.TaskID, nil), &detail); err != nil {
			t.Fatal(err)
		}
		if e.ShardingItem == 0 != e.Success {
			t.Fatalf("%+v (%s)", e, detail.FailureCause)
		}
		causes = append(causes, detail.FailureCause)
	}
	cause := regexp.MustCompile(`java.lang.IllegalStateException: no rows for shard 1\n\tat ejtest.MyJob.execute\(MyJob.java:\d+\)`)
	if !cause.MatchString(strings.Join(causes, "|")) {
		t.Fatalf("failure causes %q", causes)
	}
	if l, err := os.ReadFile(filepath.Join(out, "0.log")); err != nil || !strings.HasPrefix(string(l), "0 ok 2 data_sync_job@-@0@-@READY@-@") {
		t.Fatalf("shard 0 recorded %q (%v)", l, err)
	}
}
