package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/gin-gonic/gin"
)

// The 2.x register body (Elastic-Job-Cloud 2.x's console and tools) on
// POST /api/job/register and PUT /api/job/update: jobType SIMPLE, DATAFLOW
// or SCRIPT, jobClass, beanName, applicationContext (jobs.Config fields),
// and streamingProcess, scriptCommandLine, jobProperties and
// bootstrapScript, with numbers and booleans possibly sent as strings.

// legacyFields are the 2.x fields that are not jobs.Config's.
type legacyFields struct {
	streaming *bool   // streamingProcess → props streaming.process
	script    *string // scriptCommandLine → props script.command.line
	bootstrap string  // bootstrapScript: must be the app's
}

// Numbers and booleans sent as strings. The original's console posts its
// forms' values as they are read (jQuery's val()): cpuCount, memoryMB,
// shardingTotalCount of a job and cpuCount, memoryMB,
// eventTraceSamplingCount of an app arrive as "1.5", "128"; its server
// (Gson) took them. So one rule, on the job routes and the app routes
// alike: a top-level number or boolean field may be sent as a JSON string
// holding a JSON number or true/false; anything else in it is a 400.
var (
	jobNumbers, jobBooleans = scalarFields(reflect.TypeFor[jobs.Config](), "streamingProcess")
	appNumbers, appBooleans = scalarFields(reflect.TypeFor[app.Config]())
)

// scalarFields lists the JSON names of t's top-level number and boolean
// fields (those of embedded structs too), and the extra booleans.
func scalarFields(t reflect.Type, extraBooleans ...string) (numbers, booleans []string) {
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			n, b := scalarFields(f.Type)
			numbers, booleans = append(numbers, n...), append(booleans, b...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		switch f.Type.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
			numbers = append(numbers, name)
		case reflect.Bool:
			booleans = append(booleans, name)
		}
	}
	return numbers, append(booleans, extraBooleans...)
}

// unquoteScalars turns, in m, each field of numbers and booleans sent as
// a JSON string into the number or boolean it holds.
func unquoteScalars(m map[string]json.RawMessage, numbers, booleans []string) error {
	for _, k := range numbers {
		if s, ok := jsonString(m[k]); ok {
			// A JSON number only: ParseFloat also takes NaN, Inf, Infinity
			// and hex floats, which then broke the body (a 500).
			var f float64
			if err := json.Unmarshal([]byte(s), &f); err != nil || strings.TrimSpace(s) != s {
				return fmt.Errorf("%w: field %q must be a number, got %q", ErrBadRequest, k, s)
			}
			m[k] = json.RawMessage(s)
		}
	}
	for _, k := range booleans {
		if s, ok := jsonString(m[k]); ok {
			b, err := strconv.ParseBool(s)
			if err != nil {
				return fmt.Errorf("%w: field %q must be true or false, got %q", ErrBadRequest, k, s)
			}
			m[k] = json.RawMessage(strconv.FormatBool(b))
		}
	}
	return nil
}

// unquotedBody is body with unquoteScalars applied (an app's body). A
// body that is not a JSON object is returned as it is, for decodeStrict to
// describe.
func unquotedBody(body []byte, numbers, booleans []string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return body, nil
	}
	quoted := false
	for _, k := range append(numbers, booleans...) {
		if _, ok := jsonString(m[k]); ok {
			quoted = true
			break
		}
	}
	if !quoted {
		return body, nil // as sent: decodeStrict's messages name its bytes
	}
	if err := unquoteScalars(m, numbers, booleans); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// scriptJobClass is the job class 2.x wrote for SCRIPT jobs.
const scriptJobClass = jobs.ScriptJobClass

// legacyBody turns a 2.x body into this API's: numbers and booleans sent
// as strings become JSON numbers and booleans, and the 2.x-only fields are
// taken out (into legacyFields). Anything not a JSON object is returned as
// it is, for decodeStrict to describe.
func legacyBody(body []byte) ([]byte, legacyFields, error) {
	var lf legacyFields
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return body, lf, nil
	}
	if err := unquoteScalars(m, jobNumbers, jobBooleans); err != nil {
		return nil, lf, err
	}
	if raw, ok := m["streamingProcess"]; ok {
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, lf, fmt.Errorf("%w: field \"streamingProcess\" must be true or false", ErrBadRequest)
		}
		lf.streaming = &b
		delete(m, "streamingProcess")
	}
	if raw, ok := m["scriptCommandLine"]; ok {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, lf, fmt.Errorf("%w: field \"scriptCommandLine\" must be a string", ErrBadRequest)
		}
		lf.script = &s
		delete(m, "scriptCommandLine")
	}
	if raw, ok := m["jobProperties"]; ok { // 2.x's exception and executor service handler classes: no effect here
		if !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) && string(bytes.TrimSpace(raw)) != "null" {
			return nil, lf, fmt.Errorf("%w: field \"jobProperties\" must be an object", ErrBadRequest)
		}
		delete(m, "jobProperties")
	}
	if raw, ok := m["bootstrapScript"]; ok {
		if err := json.Unmarshal(raw, &lf.bootstrap); err != nil {
			return nil, lf, fmt.Errorf("%w: field \"bootstrapScript\" must be a string", ErrBadRequest)
		}
		delete(m, "bootstrapScript")
	}
	if s, ok := jsonString(m["jobClass"]); ok && s == scriptJobClass {
		delete(m, "jobClass") // what 2.x wrote for SCRIPT jobs: not a class to run
	}
	out, err := json.Marshal(m)
	return out, lf, err
}

// jsonString is raw's value when it is a JSON string.
func jsonString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

// apply puts the 2.x fields into cfg's props (jobs.Legacy2x, which the
// registry also applies to the jobs 2.x stored).
func (lf legacyFields) apply(cfg *jobs.Config) {
	jobs.Legacy2x{Streaming: lf.streaming, Script: lf.script}.Apply(cfg)
}

// checkLegacyApp refuses a 2.x bootstrapScript that is not the app's (the
// 2.x body carried it; here the app owns it and PUT /api/app changes it).
func (s *jobHandlers) checkLegacyApp(ctx context.Context, lf legacyFields, cfg jobs.Config) error {
	if lf.bootstrap == "" {
		return nil
	}
	a, err := s.regIn(ctx).Config().App(ctx, cfg.AppName)
	switch {
	case errors.Is(err, registry.ErrAppNotFound):
		return nil // the job's own checks name the missing app
	case err != nil:
		return err
	case a.BootstrapScript != lf.bootstrap:
		return fmt.Errorf("%w: bootstrapScript %q differs from app '%s''s %q: the app's bootstrapScript is what runs; omit it, or change the app with PUT /api/app",
			ErrBadRequest, lf.bootstrap, a.AppName, a.BootstrapScript)
	}
	return nil
}

// saveJob decodes a job body (this API's or the 2.x one) onto cfg (the
// defaults, or the current config), checks it, writes it and answers it.
func (s *jobHandlers) saveJob(c *gin.Context, body []byte, cfg jobs.Config, check func(jobs.Config) error, write func(context.Context, jobs.Config) error) {
	body, lf, err := legacyBody(body)
	if err == nil {
		err = decodeStrict(body, &cfg)
	}
	if err == nil {
		lf.apply(&cfg)
		err = s.checkLegacyApp(c, lf, cfg)
	}
	if err == nil {
		err = check(cfg)
	}
	dry := false
	if err == nil {
		dry, err = dryRunParam(c)
	}
	if err == nil && !dry {
		err = write(c, cfg)
	}
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	c.JSON(http.StatusOK, cfg)
}

// jobTypeStatistics is GET /api/job/statistics/jobs/type, as 2.x answered
// it, plus HTTP jobs (which 2.x did not have).
type jobTypeStatistics struct {
	ScriptJobCount   int `json:"scriptJobCount"`
	SimpleJobCount   int `json:"simpleJobCount"`
	DataflowJobCount int `json:"dataflowJobCount"`
	HTTPJobCount     int `json:"httpJobCount"`
}

// jobTypes counts the registered jobs by type: SCRIPT and jobType "" jobs
// with a script command line are script jobs, DATAFLOW dataflow jobs, HTTP
// http jobs, and the others (SIMPLE, and "": the app's bootstrap script)
// simple jobs.
func (hs *historyHandlers) jobTypes(c *gin.Context) {
	all, err := hs.s.regOf(c).Config().Jobs(c)
	if err != nil {
		writeError(c, hs.s.log, err)
		return
	}
	var out jobTypeStatistics
	for _, j := range all {
		switch {
		case j.JobType == jobs.TypeScript, j.JobType == jobs.TypeApp && j.Props["script.command.line"] != "":
			out.ScriptJobCount++
		case j.JobType == jobs.TypeDataflow:
			out.DataflowJobCount++
		case j.JobType == jobs.TypeHTTP:
			out.HTTPJobCount++
		default:
			out.SimpleJobCount++
		}
	}
	c.JSON(http.StatusOK, out)
}
