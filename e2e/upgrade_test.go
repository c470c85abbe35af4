//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejcloud/elasticjob/e2e/harness"
	"github.com/ejcloud/elasticjob/internal/testproxy"
)

// Upgrade in place (docs/upgrading.md): the original's scheduler is gone,
// its ZooKeeper tree stays, and this scheduler starts on the same
// zk_servers and zk_namespace. The trees are written with a plain
// ZooKeeper client, value by value as the original 3.0.4 (YamlEngine's
// YAML, keys in alphabetical order) and 2.1.5 (Gson's JSON) wrote them,
// never by this repository's encoders. Each holds an app, a job with a
// pending run ("1" under /state/ready), a disabled job on a cron of every
// second, a cron job of every two seconds, and a job whose shard the
// original left running (its bare task id under /state/running): the API
// lists them with their settings, the pending run runs once on every
// shard, the cron job fires on its cron, the disabled job never runs, and
// the task left running, unknown to this Mesos master, is reconciled
// before the first launch and its shard runs again once, as a failover.
func TestUpgradeFromOriginal(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		tree func(app string, out outs) map[string]string
	}{
		{"3.0.4", original304Tree},
		{"2.1.5", original215Tree},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			servers := testproxy.ZK(t)
			ns := fmt.Sprintf("ej-e2e-upgrade-%s-%d", strings.ReplaceAll(c.name, ".", ""), time.Now().UnixNano())
			out := outs{pending: outDir(t), off: outDir(t), cron: outDir(t), orphan: outDir(t)}
			pending, off, cron := out.pending, out.off, out.cron
			tree := c.tree(fileURL(recorderTGZ), out)
			writeOriginalTree(t, servers, ns, tree)
			ml := startMesosLocal(t, filepath.Join(t.TempDir(), "mesos"), harness.FreePort(t))
			s := startScheduler(t, schedOpts{extra: []string{"--mesos-url", ml.url, "--zk-servers", servers, "--zk-namespace", ns,
				"--allow-file-app-urls=true"}})
			checkUpgradedAPI(t, s, c.name, out)

			eventually(t, waitLong, func() bool { return len(perItem(runsIn(t, pending))) == 3 && s.idle("pending_job") },
				"the pending run on its 3 shards (runs: %v)", late(func() any { return runsIn(t, pending) }))
			eventually(t, 2*waitLong, func() bool {
				m := perItem(runsIn(t, cron))
				return m[0] >= 2 && m[1] >= 2
			}, "cron_job to fire twice on each of its 2 shards (runs: %v)", late(func() any { return runsIn(t, cron) }))
			if m := perItem(runsIn(t, pending)); !maps.Equal(m, map[int]int{0: 1, 1: 1, 2: 1}) {
				t.Errorf("pending_job's runs by shard: %v, want one each", m)
			}
			uniqueTaskIDs(t, runsIn(t, pending))
			for _, r := range runsIn(t, cron) {
				if r.Source != "NORMAL_TRIGGER" {
					t.Errorf("cron_job ran as %s: %+v", r.Source, r)
				}
			}
			// The task the original left running is unknown to this Mesos
			// master: reconciled before the first launch, its shard runs
			// again once, as a failover.
			eventually(t, waitLong, func() bool { return countRuns(t, out.orphan) == 1 && s.idle("orphan_job") },
				"the orphaned shard to run again (runs: %v)", late(func() any { return runsIn(t, out.orphan) }))
			if runs := runsIn(t, out.orphan); len(runs) != 1 || runs[0].Source != "FAILOVER" {
				t.Errorf("orphan_job's runs: %+v, want one FAILOVER", runs)
			}
			if runs := runsIn(t, off); len(runs) != 0 {
				t.Errorf("the disabled off_job ran: %v", runs)
			}
			if got := strings.TrimSpace(string(s.must(http.MethodGet, "/api/job/off_job/disable", nil))); got != "true" {
				t.Errorf("off_job's disable flag: %s", got)
			}
			// Going back: the scheduler stopped with nothing running, the procedure run, the
			// tree the original reads is intact (goingback_test.go).
			s.Stop(t)
			goBack(t, servers, ns, tree)
		})
	}
}

// outs are the directories the test's jobs write their runs into.
type outs struct{ pending, off, cron, orphan string }

// original304Tree is what 3.0.4's CloudAppConfigurationService,
// CloudJobConfigurationService, ReadyService and DisableJobService write.
func original304Tree(appURL string, out outs) map[string]string {
	job := func(name, cronExpr string, shards int, param string) string {
		return "appName: legacy_app\n" +
			"cpuCount: 0.1\n" +
			"cron: " + cronExpr + "\n" +
			"description: ''\n" +
			"disabled: false\n" +
			"failover: true\n" +
			"jobExecutionType: TRANSIENT\n" +
			"jobName: " + name + "\n" +
			"jobParameter: " + param + "\n" +
			"maxTimeDiffSeconds: -1\n" +
			"memoryMB: 32.0\n" +
			"misfire: false\n" +
			"monitorExecution: true\n" +
			"overwrite: false\n" +
			"reconcileIntervalMinutes: 10\n" +
			"shardingItemParameters: ''\n" +
			fmt.Sprintf("shardingTotalCount: %d\n", shards)
	}
	return map[string]string{
		"/config/app/legacy_app": "appCacheEnable: true\n" +
			"appName: legacy_app\n" +
			"appURL: " + appURL + "\n" +
			"bootstrapScript: bin/record.sh\n" +
			"cpuCount: 0.1\n" +
			"eventTraceSamplingCount: 0\n" +
			"memoryMB: 64.0\n",
		"/config/job/pending_job":                  job("pending_job", "0 0 0 1 1 ? 2099", 3, out.pending),
		"/config/job/off_job":                      job("off_job", "'* * * * * ?'", 1, out.off),
		"/config/job/cron_job":                     job("cron_job", "0/2 * * * * ?", 2, out.cron),
		"/config/job/orphan_job":                   job("orphan_job", "0 0 0 1 1 ? 2099", 1, out.orphan),
		"/state/running/orphan_job/orphan_job@-@0": "orphan_job@-@0@-@READY@-@7c1e0cf4-2a49-4bf8-a7f4-5d2c39a1f0b3-S3@-@3f0c8a53-54f4-4c57-b3a0-6c1d7e0d9a21",
		"/state/ready/pending_job":                 "1",
		"/state/disable/job/off_job":               "off_job",
		"/ha/framework_id":                         "7c1e0cf4-2a49-4bf8-a7f4-5d2c39a1f0b3-0007",
	}
}

// original215Tree is what 2.1.5 writes: its Gson adapters' JSON, in their
// field order; its jobs are SCRIPT jobs running the app's bin/record.sh.
func original215Tree(appURL string, out outs) map[string]string {
	job := func(name, cronExpr string, shards int, param string) string {
		return `{"jobName":"` + name + `","jobClass":"com.dangdang.ddframe.job.api.script.ScriptJob","jobType":"SCRIPT",` +
			`"cron":"` + cronExpr + `","shardingTotalCount":` + fmt.Sprint(shards) + `,"shardingItemParameters":"","jobParameter":"` + param + `",` +
			`"failover":true,"misfire":false,"description":"",` +
			`"jobProperties":{"job_exception_handler":"com.dangdang.ddframe.job.executor.handler.impl.DefaultJobExceptionHandler",` +
			`"executor_service_handler":"com.dangdang.ddframe.job.executor.handler.impl.DefaultExecutorServiceHandler"},` +
			`"scriptCommandLine":"bin/record.sh","appName":"legacy_app","cpuCount":0.1,"memoryMB":32.0,"jobExecutionType":"TRANSIENT"}`
	}
	return map[string]string{
		"/config/app/legacy_app": `{"appName":"legacy_app","appURL":"` + appURL + `","bootstrapScript":"bin/record.sh",` +
			`"cpuCount":0.1,"memoryMB":64.0,"appCacheEnable":true,"eventTraceSamplingCount":0}`,
		"/config/job/pending_job":                  job("pending_job", "0 0 0 1 1 ? 2099", 3, out.pending),
		"/config/job/off_job":                      job("off_job", "* * * * * ?", 1, out.off),
		"/config/job/cron_job":                     job("cron_job", "0/2 * * * * ?", 2, out.cron),
		"/config/job/orphan_job":                   job("orphan_job", "0 0 0 1 1 ? 2099", 1, out.orphan),
		"/state/running/orphan_job/orphan_job@-@0": "orphan_job@-@0@-@READY@-@20161213-150115-16777343-5050-3389-S2@-@5b1f7c0e-3a5d-4f0a-9d51-0c8e2b7a6d44",
		"/state/ready/pending_job":                 "1",
		"/state/disable/job/off_job":               "off_job",
		"/ha/framework_id":                         "20161213-150115-16777343-5050-3389-0000",
	}
}

// writeOriginalTree writes tree under /ns as the original's Curator client
// did: persistent nodes, missing parents created empty.
func writeOriginalTree(t *testing.T, servers, ns string, tree map[string]string) {
	t.Helper()
	conn, _, err := zk.Connect(strings.Split(servers, ","), 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for p, v := range tree {
		parts := strings.Split(ns+p, "/")
		for i := 1; i < len(parts); i++ {
			if _, err := conn.Create("/"+strings.Join(parts[:i], "/"), nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
				t.Fatal(err)
			}
		}
		if _, err := conn.Create("/"+ns+p, []byte(v), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
}

// checkUpgradedAPI checks that the API lists the original's app and jobs
// with their settings.
func checkUpgradedAPI(t *testing.T, s *scheduler, version string, out outs) {
	t.Helper()
	var apps []appConfig
	s.getJSON("/api/app/list", &apps)
	want := appConfig{AppName: "legacy_app", AppURL: fileURL(recorderTGZ), BootstrapScript: "bin/record.sh", CPUCount: 0.1, MemoryMB: 64, AppCacheEnable: true}
	if len(apps) != 1 || apps[0] != want {
		t.Errorf("apps: %+v", apps)
	}
	var list []struct {
		jobConfig
		JobType string `json:"jobType"`
	}
	s.getJSON("/api/job/jobs", &list)
	got := map[string]string{}
	for _, j := range list {
		b, _ := json.Marshal(j.jobConfig)
		got[j.JobName] = j.JobType + " " + string(b)
	}
	typ, props := "", ""
	if version == "2.1.5" {
		typ, props = "SCRIPT", `,"props":{"script.command.line":"bin/record.sh"}`
	}
	job := func(name, cronExpr string, shards int, param string) string {
		return fmt.Sprintf(`%s {"jobName":%q,"appName":"legacy_app","jobExecutionType":"TRANSIENT","cron":%q,"shardingTotalCount":%d,`+
			`"jobParameter":%q,"cpuCount":0.1,"memoryMB":32,"failover":true,"misfire":false%s}`, typ, name, cronExpr, shards, param, props)
	}
	wantJobs := map[string]string{
		"pending_job": job("pending_job", "0 0 0 1 1 ? 2099", 3, out.pending),
		"off_job":     job("off_job", "* * * * * ?", 1, out.off),
		"cron_job":    job("cron_job", "0/2 * * * * ?", 2, out.cron),
		"orphan_job":  job("orphan_job", "0 0 0 1 1 ? 2099", 1, out.orphan),
	}
	for name, w := range wantJobs {
		if got[name] != w {
			t.Errorf("job %s:\n got %s\nwant %s", name, got[name], w)
		}
	}
	if len(got) != len(wantJobs) {
		t.Errorf("jobs: %v", got)
	}
}
