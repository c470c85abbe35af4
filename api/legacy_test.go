package api_test

import (
	"context"
	"net/http"
	"testing"
)

// Bodies as Elastic-Job-Cloud 2.x's console and tools sent them: jobType,
// jobClass, beanName, applicationContext, streamingProcess,
// scriptCommandLine, jobProperties, bootstrapScript, numbers and booleans
// as strings.
const (
	legacySimple = `{"jobName":"simple_job","appName":"my_app","jobType":"SIMPLE","jobClass":"com.example.MyJob",
 "cron":"0/5 * * * * ?","shardingTotalCount":"3","shardingItemParameters":"0=a,1=b,2=c","jobParameter":"",
 "failover":"true","misfire":"false","description":"","cpuCount":"0.1","memoryMB":"64.0","jobExecutionType":"TRANSIENT",
 "jobProperties":{"job_exception_handler":"com.dangdang.ddframe.job.executor.handler.impl.DefaultJobExceptionHandler"},
 "bootstrapScript":"bin/start.sh"}`
	legacyDataflow = `{"jobName":"dataflow_job","appName":"my_app","jobType":"DATAFLOW","jobClass":"com.example.MyDataflowJob",
 "streamingProcess":"true","cron":"0/5 * * * * ?","shardingTotalCount":1,"cpuCount":0.1,"memoryMB":64,"jobExecutionType":"DAEMON"}`
	legacyScript = `{"jobName":"script_job","appName":"my_app","jobType":"SCRIPT","jobClass":"com.dangdang.ddframe.job.api.script.ScriptJob",
 "scriptCommandLine":"bin/run.sh","cron":"0/5 * * * * ?","shardingTotalCount":1,"cpuCount":0.1,"memoryMB":64,"jobExecutionType":"TRANSIENT"}`
	legacyBean = `{"jobName":"bean_job","appName":"my_app","jobType":"SIMPLE","jobClass":"com.example.MyJob","beanName":"myJob",
 "applicationContext":"META-INF/applicationContext.xml","cron":"0/5 * * * * ?","shardingTotalCount":1,"cpuCount":0.1,"memoryMB":64,"jobExecutionType":"TRANSIENT"}`
)

func TestLegacyRegisterBody(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/app", manualPublishApp)
	for _, b := range []string{legacySimple, legacyDataflow, legacyScript, legacyBean} {
		e.must(http.StatusOK, http.MethodPost, "/api/job/register", b)
	}
	ctx := context.Background()
	j, err := e.reg.Config().Job(ctx, "simple_job")
	if err != nil || j.JobType != "SIMPLE" || j.JobClass != "com.example.MyJob" || j.ShardingTotalCount != 3 ||
		!j.Failover || j.Misfire || j.CPUCount != 0.1 || j.MemoryMB != 64 {
		t.Errorf("simple_job: %+v %v", j, err)
	}
	if j, _ := e.reg.Config().Job(ctx, "dataflow_job"); j.JobType != "DATAFLOW" || j.Props["streaming.process"] != "true" || j.JobExecutionType != "DAEMON" {
		t.Errorf("dataflow_job: %+v", j)
	}
	if j, _ := e.reg.Config().Job(ctx, "script_job"); j.JobType != "SCRIPT" || j.JobClass != "" || j.Props["script.command.line"] != "bin/run.sh" {
		t.Errorf("script_job: %+v", j)
	}
	if j, _ := e.reg.Config().Job(ctx, "bean_job"); j.BeanName != "myJob" || j.ApplicationContext != "META-INF/applicationContext.xml" {
		t.Errorf("bean_job: %+v", j)
	}

	// PUT /api/job/update takes the same body: strings, streamingProcess onto the props.
	e.must(http.StatusOK, http.MethodPut, "/api/job/update", `{"jobName":"dataflow_job","streamingProcess":"false","shardingTotalCount":"2"}`)
	if j, _ := e.reg.Config().Job(ctx, "dataflow_job"); j.Props["streaming.process"] != "false" || j.ShardingTotalCount != 2 || j.JobClass != "com.example.MyDataflowJob" {
		t.Errorf("updated dataflow_job: %+v", j)
	}

	r := e.must(http.StatusOK, http.MethodGet, "/api/job/statistics/jobs/type", "")
	if got := decode[map[string]float64](t, r); got["scriptJobCount"] != 1 || got["simpleJobCount"] != 2 || got["dataflowJobCount"] != 1 || got["httpJobCount"] != 0 {
		t.Errorf("jobs/type: %s", r.Body)
	}

	for body, want := range map[string]string{
		`{"jobName":"x","appName":"my_app","jobType":"SIMPLE","cron":"0/5 * * * * ?"}`:                              "jobClass cannot be empty",
		`{"jobName":"x","appName":"my_app","shardingTotalCount":"three"}`:                                           `field "shardingTotalCount" must be a number, got "three"`,
		`{"jobName":"x","appName":"my_app","failover":"yes"}`:                                                       `field "failover" must be true or false, got "yes"`,
		`{"jobName":"x","appName":"my_app","jobType":"SIMPLE","jobClass":"a.B","bootstrapScript":"bin/other.sh"}`:   `bootstrapScript "bin/other.sh" differs from app 'my_app''s "bin/start.sh"`,
		`{"jobName":"x","appName":"my_app","jobType":"SIMPLE","jobClass":"a.B","beanName":"b"}`:                     "beanName and applicationContext go together",
		`{"jobName":"x","appName":"my_app","jobType":"SIMPLE","jobClass":"a.B","jobProperties":"handler"}`:          `field "jobProperties" must be an object`,
		`{"jobName":"x","appName":"my_app","jobType":"SIMPLE","jobClass":"a.B","executorServiceHandler":"handler"}`: `unknown field "executorServiceHandler"`,
	} {
		e.wantError(e.request(http.MethodPost, "/api/job/register", body), http.StatusBadRequest, want)
	}
}
