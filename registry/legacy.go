package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/task"
)

// The original ElasticJob-Cloud's registry, read as it left it, so a team
// upgrades by starting this scheduler on the original's ZooKeeper tree
// (docs/upgrading.md). The layout is the same; some values are not:
//
//	/config/app/{app}     3.0.x: YAML (YamlEngine, keys in alphabetical order); 2.1.x: Gson JSON (ours: read as is)
//	/config/job/{job}     3.0.x: YAML of CloudJobConfigurationPOJO; 2.1.x: Gson JSON with jobClass, jobType,
//	                      jobProperties, streamingProcess / scriptCommandLine, beanName, applicationContext
//	/state/ready/{job}    a decimal count of pending executions ("1")
//	/state/running/{job}/{job}@-@{item}   the bare task id of the running task
//	/state/failover/{job}/{job}@-@{item}  the bare task id of the task that failed
//	/state/disable/{app|job}/{name}       the name (ours: present = disabled; read as is)
//	/ha/framework_id      the framework id as text (ours, read as is)
//
// Nothing is rewritten on reading: a node keeps the original's form until
// this scheduler next changes it (a launch takes the ready count, an API
// update rewrites the job), and is then written in this scheduler's JSON.
// So a tree nobody changed can still be read by the original; one this
// scheduler worked on cannot, wholly (docs/upgrading.md, "Going back").
//
// decodeAt calls legacyDecode when a value is not JSON of its type, and
// legacyAmend after a 2.x job's JSON decoded.

// legacyDecode reads the value at p in the original's form into v, when it
// is one; handled is false when b is not the original's form of v's type
// either (decodeAt then reports the JSON error). A value of the original's
// form whose content is wrong is handled with an error.
func legacyDecode(p string, b []byte, v any) (handled bool, err error) {
	switch v := v.(type) {
	case *app.Config:
		m, ok := yamlMapping(b)
		if !ok || m.str("appName") == "" {
			return false, nil
		}
		*v = legacyApp(m)
		return true, nil
	case *jobs.Config:
		m, ok := yamlMapping(b)
		if !ok || m.str("jobName") == "" {
			return false, nil
		}
		*v = legacyJob(m)
		return true, nil
	case *queue.Ready:
		rd, ok := legacyReady(b)
		if ok {
			*v = rd
		}
		return ok, nil
	case *task.Entry:
		e, ok, err := legacyRunning(p, b)
		if ok && err == nil {
			*v = e
		}
		return ok, err
	case *queue.Failover:
		f, ok, err := legacyFailover(p, b)
		if ok && err == nil {
			*v = f
		}
		return ok, err
	}
	return false, nil
}

// legacyAmend maps the 2.x fields of a job stored as Gson JSON (which
// decodes as JSON, without them): streamingProcess and scriptCommandLine
// into props, and the SCRIPT jobs' marker class away, as the 2.x register
// body is mapped (jobs.Legacy2x). Only a job that has 2.x's jobProperties,
// which every 2.x job has and none of ours, is looked at.
func legacyAmend(b []byte, v any) {
	c, ok := v.(*jobs.Config)
	if !ok || !bytes.Contains(b, []byte(`"jobProperties"`)) {
		return
	}
	var x struct {
		JobProperties     json.RawMessage `json:"jobProperties"`
		StreamingProcess  *bool           `json:"streamingProcess"`
		ScriptCommandLine *string         `json:"scriptCommandLine"`
	}
	if json.Unmarshal(b, &x) != nil || x.JobProperties == nil {
		return
	}
	jobs.Legacy2x{Streaming: x.StreamingProcess, Script: x.ScriptCommandLine}.Apply(c)
	if c.Props == nil {
		c.Props = map[string]string{} // as this scheduler writes a job without props
	}
}

// legacyApp is a 3.0.x app (CloudAppConfigurationPOJO), with its defaults
// for what is absent.
func legacyApp(m yamlMap) app.Config {
	return app.Config{
		AppName:                 m.str("appName"),
		AppURL:                  m.str("appURL"),
		BootstrapScript:         m.str("bootstrapScript"),
		CPUCount:                m.num("cpuCount", 1),
		MemoryMB:                m.num("memoryMB", 128),
		AppCacheEnable:          m.boolean("appCacheEnable", true),
		EventTraceSamplingCount: int(m.num("eventTraceSamplingCount", 0)),
	}
}

// legacyJob is a 3.0.x job (CloudJobConfigurationPOJO). Its fields the
// original's cloud scheduler never looked at (monitorExecution,
// maxTimeDiffSeconds, reconcileIntervalMinutes, jobShardingStrategyType,
// disabled, overwrite) have no counterpart and are dropped; the error
// handlers this scheduler lacks are mapped (legacyHandler).
func legacyJob(m yamlMap) jobs.Config {
	c := jobs.Config{
		JobName:                       m.str("jobName"),
		AppName:                       m.str("appName"),
		JobExecutionType:              jobs.ExecutionType(m.str("jobExecutionType")),
		Cron:                          m.str("cron"),
		ShardingTotalCount:            int(m.num("shardingTotalCount", 0)),
		ShardingItemParameters:        m.str("shardingItemParameters"),
		JobParameter:                  m.str("jobParameter"),
		CPUCount:                      m.num("cpuCount", 0),
		MemoryMB:                      m.num("memoryMB", 0),
		Failover:                      m.boolean("failover", false),
		Misfire:                       m.boolean("misfire", false),
		Description:                   m.str("description"),
		JobExecutorServiceHandlerType: m.str("jobExecutorServiceHandlerType"),
		Props:                         map[string]string{},
	}
	if c.JobExecutionType == "" {
		c.JobExecutionType = jobs.Transient
	}
	if props, ok := m["props"].(map[string]any); ok {
		for k, v := range props {
			c.Props[k] = scalar(v)
		}
	}
	c.JobErrorHandlerType = legacyHandler(m.str("jobErrorHandlerType"), c.Props)
	return c
}

// legacyHandler maps a 3.0.x jobErrorHandlerType: LOG, THROW and IGNORE
// are ours; DINGTALK and WECHAT become WEBHOOK of that format posting to
// the webhook their props name (none named: LOG); EMAIL, which this
// scheduler does not send, becomes LOG.
func legacyHandler(h string, props map[string]string) string {
	switch h {
	case "DINGTALK", "WECHAT":
		format := strings.ToLower(h)
		url := props[format+".webhook"]
		if url == "" {
			return jobs.HandlerLog
		}
		props["webhook.url"], props["webhook.format"] = url, format
		return jobs.HandlerWebhook
	case "EMAIL":
		return jobs.HandlerLog
	}
	return h
}

// legacyReady is a ready count as the original wrote it: the decimal
// number of pending executions; more than one were queued by misfire
// while one was pending. Who queued them was not recorded.
func legacyReady(b []byte) (queue.Ready, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 1 {
		return queue.Ready{}, false
	}
	return queue.Ready{Count: n, Misfired: n - 1}, true
}

// legacyTaskID parses the bare task id the original wrote at p, a running
// or failover node {job}@-@{item}: it must name that node's shard.
func legacyTaskID(p string, b []byte) (jobs.TaskID, bool, error) {
	s := strings.TrimSpace(string(b))
	if !strings.Contains(s, jobs.Separator) || strings.ContainsAny(s, "{[\"") {
		return jobs.TaskID{}, false, nil
	}
	if !utf8.ValidString(s) {
		return jobs.TaskID{}, true, fmt.Errorf("the original's task id %q is not UTF-8", s)
	}
	id, err := jobs.ParseTaskID(s)
	if err != nil {
		return id, true, fmt.Errorf("the original's task id: %w", err)
	}
	if key := lastSegment(p); key != id.MetaKey() {
		return id, true, fmt.Errorf("the original's task id %q is not of shard %s", s, key)
	}
	return id, true, nil
}

// legacyRunning is a running node as the original wrote it: the bare id
// of a task it launched. It is taken as running on the agent its id
// names; the reconciliation that follows a subscription tells what it is.
func legacyRunning(p string, b []byte) (task.Entry, bool, error) {
	id, ok, err := legacyTaskID(p, b)
	if !ok || err != nil {
		return task.Entry{}, ok, err
	}
	src := string(jobs.SourceNormal)
	if id.Kind == jobs.KindFailover {
		src = string(jobs.SourceFailover)
	}
	return task.Entry{TaskID: id.String(), AgentID: id.AgentID, State: task.Running, Source: src}, true, nil
}

// LeftByOriginal reports a running entry read from the original's bare
// task id (legacyRunning): it names no executor and no launch instant,
// which every entry this scheduler writes has.
func LeftByOriginal(e task.Entry) bool { return e.ExecutorID == "" && e.LaunchedAt.IsZero() }

// legacyFailover is a failover node as the original wrote it: the bare id
// of the task that failed.
func legacyFailover(p string, b []byte) (queue.Failover, bool, error) {
	id, ok, err := legacyTaskID(p, b)
	if !ok || err != nil {
		return queue.Failover{}, ok, err
	}
	return queue.Failover{TaskID: id.String()}, true, nil
}

// yamlMap is a YAML mapping's keys and values (strings, float64 numbers,
// booleans, maps and lists, as JSON would hold them).
type yamlMap map[string]any

// yamlMapping parses b as a YAML mapping in block style, as YamlEngine
// dumps one; false when it is not one. JSON (a flow mapping, which YAML
// would take too) is not: JSON this scheduler cannot decode is damaged,
// not the original's, and must not be read leniently.
func yamlMapping(b []byte) (yamlMap, bool) {
	if json.Valid(b) {
		return nil, false
	}
	var m yamlMap
	if err := yaml.Unmarshal(b, &m); err != nil || m == nil {
		return nil, false
	}
	return m, true
}

// str is the value of k as text ("" when absent or null).
func (m yamlMap) str(k string) string { return scalar(m[k]) }

func (m yamlMap) num(k string, def float64) float64 {
	switch v := m[k].(type) {
	case float64:
		return v
	case string:
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return f
		}
	}
	return def
}

func (m yamlMap) boolean(k string, def bool) bool {
	switch v := m[k].(type) {
	case bool:
		return v
	case string:
		if b, err := strconv.ParseBool(v); err == nil {
			return b
		}
	}
	return def
}

// scalar is a YAML scalar as text (a Properties value is one).
func scalar(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
