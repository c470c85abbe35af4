package jobs

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/app"
)

func TestTaskIDRoundTrip(t *testing.T) {
	id := NewTaskID("my_job", 2, KindFailover, "agent-S0")
	s := id.String()
	if !strings.HasPrefix(s, "my_job@-@2@-@FAILOVER@-@agent-S0@-@") {
		t.Fatalf("task id %q", s)
	}
	back, err := ParseTaskID(s)
	if err != nil || back != id {
		t.Fatalf("ParseTaskID(%q) = %+v, %v", s, back, err)
	}
	if id.MetaKey() != "my_job@-@2" {
		t.Fatalf("meta key %q", id.MetaKey())
	}
	if NewTaskID("j", 0, KindReady, "a").UUID == NewTaskID("j", 0, KindReady, "a").UUID {
		t.Fatal("uuid reused")
	}
	for _, bad := range []string{"", "a@-@b", "j@-@x@-@READY@-@a@-@u", "j@-@-1@-@READY@-@a@-@u", "j@-@0@-@NOPE@-@a@-@u", "j@-@0@-@READY@-@a@-@u@-@extra"} {
		if _, err := ParseTaskID(bad); err == nil {
			t.Errorf("ParseTaskID(%q) accepted", bad)
		}
	}
}

func TestExecutorAndMetaKeys(t *testing.T) {
	if got := ExecutorID("app", "S0"); got != "app@-@S0" {
		t.Fatal(got)
	}
	a, ag, err := ParseExecutorID("app@-@S0")
	if err != nil || a != "app" || ag != "S0" {
		t.Fatalf("%s %s %v", a, ag, err)
	}
	if _, _, err := ParseExecutorID("noseparator"); err == nil {
		t.Fatal("bad executor id accepted")
	}
	j, item, err := ParseMetaKey("job@-@7")
	if err != nil || j != "job" || item != 7 {
		t.Fatalf("%s %d %v", j, item, err)
	}
}

func TestShardingItemParameters(t *testing.T) {
	got, err := ParseShardingItemParameters(" 0=Beijing, 1=Shang=hai ,2= ", 3)
	if err != nil || got[0] != "Beijing" || got[1] != "Shang=hai" || got[2] != "" || len(got) != 3 {
		t.Fatalf("%v %v", got, err)
	}
	if m, err := ParseShardingItemParameters("", 1); err != nil || len(m) != 0 {
		t.Fatalf("empty: %v %v", m, err)
	}
	for in, want := range map[string]string{
		"0":       "must look like 0=value",
		"x=a":     "not a number",
		"3=a":     "must be in [0, 3)",
		"-1=a":    "must be in [0, 3)",
		"0=a,0=b": "appears twice",
	} {
		if _, err := ParseShardingItemParameters(in, 3); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

func validJob() Config {
	c := Default()
	c.JobName, c.AppName, c.Cron = "j", "a", "0/5 * * * * ?"
	return c
}

func TestConfigValidation(t *testing.T) {
	if err := validJob().Validate(); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(*Config){
		"jobName is required":         func(c *Config) { c.JobName = "" },
		"reserved":                    func(c *Config) { c.JobName = "jobs" },
		"appName":                     func(c *Config) { c.AppName = "a/b" },
		"jobExecutionType":            func(c *Config) { c.JobExecutionType = "SOMETIMES" },
		"seconds":                     func(c *Config) { c.Cron = "61 * * * * ?" },
		"cron is required for DAEMON": func(c *Config) { c.JobExecutionType = Daemon; c.Cron = "" },
		"timeZone":                    func(c *Config) { c.TimeZone = "Mars/Olympus" },
		"shardingTotalCount":          func(c *Config) { c.ShardingTotalCount = 0 },
		"at most":                     func(c *Config) { c.ShardingTotalCount = MaxShards + 1 },
		"shardingItemParameters item": func(c *Config) { c.ShardingItemParameters = "5=x" },
		"cpuCount must be at least":   func(c *Config) { c.CPUCount = 0.0001 },
		"memoryMB must be at least":   func(c *Config) { c.MemoryMB = 0 },
	}
	for want, mod := range cases {
		c := validJob()
		mod(&c)
		err := c.Validate()
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
	c := validJob()
	c.Cron = ""
	if err := c.Validate(); err != nil {
		t.Errorf("a TRANSIENT job without cron (trigger only) must be valid: %v", err)
	}
	c.Cron = "0/5 * * * * * ?"
	if err := c.Validate(); err != nil {
		t.Errorf("the quick start's cron: %v", err)
	}
}

func TestTaskDataRoundTripAndChecks(t *testing.T) {
	d := TaskData{Version: TaskDataVersion, ShardingContext: ShardingContext{JobName: "j", ShardingItem: 1}, Job: validJob()}
	d.App.AppName = "a"
	back, err := UnmarshalTaskData(d.Marshal())
	if err != nil || back.ShardingContext.ShardingItem != 1 || back.App.AppName != "a" {
		t.Fatalf("%+v %v", back, err)
	}
	for _, bad := range []string{"{", `{"version":2}`, `{"version":1}`} {
		if _, err := UnmarshalTaskData([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	b, _ := json.Marshal(Config{JobName: "j"})
	if !strings.Contains(string(b), `"props":{}`) {
		t.Errorf("nil props encoded as %s", b)
	}
}

func TestRunSettingsValidation(t *testing.T) {
	p := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	ok := []func(*Config){
		func(c *Config) { c.JobType = TypeScript; c.Props = p("script.command.line", "echo hi") },
		func(c *Config) { c.JobType = TypeHTTP; c.Props = p("http.url", "http://h/x", "http.method", "post") },
		func(c *Config) { c.TimeoutSeconds, c.MaxRetries, c.RetryBackoffSeconds = 30, 3, 5 },
		func(c *Config) { c.JobErrorHandlerType = HandlerIgnore },
		func(c *Config) {
			c.JobErrorHandlerType = HandlerWebhook
			c.Props = p("webhook.url", "https://oapi.dingtalk.com/robot/send?access_token=x", "webhook.format", "dingtalk")
		},
	}
	for i, mod := range ok {
		c := validJob()
		mod(&c)
		if err := c.Validate(); err != nil {
			t.Errorf("case %d: %v", i, err)
		}
	}
	bad := map[string]func(*Config){
		"script.command.line is required": func(c *Config) { c.JobType = TypeScript },
		"http.url must be":                func(c *Config) { c.JobType = TypeHTTP; c.Props = p("http.url", "ftp://x") },
		"http.method":                     func(c *Config) { c.JobType = TypeHTTP; c.Props = p("http.url", "http://h", "http.method", "FETCH") },
		"http.read.timeout.milliseconds": func(c *Config) {
			c.JobType = TypeHTTP
			c.Props = p("http.url", "http://h", "http.read.timeout.milliseconds", "-3")
		},
		"jobType must be":          func(c *Config) { c.JobType = "STREAM" },
		"jobClass cannot be empty": func(c *Config) { c.JobType = TypeDataflow },
		"not a Java class name":    func(c *Config) { c.JobClass = "com.example.My Job" },
		"go together":              func(c *Config) { c.JobType = TypeSimple; c.BeanName = "myJob" },
		"a SCRIPT job has none": func(c *Config) {
			c.JobType, c.JobClass = TypeScript, "com.example.MyJob"
			c.Props = p("script.command.line", "echo")
		},
		"timeoutSeconds":      func(c *Config) { c.TimeoutSeconds = -1 },
		"maxRetries":          func(c *Config) { c.MaxRetries = 11 },
		"retryBackoffSeconds": func(c *Config) { c.RetryBackoffSeconds = 99999 },
		"webhook.url":         func(c *Config) { c.JobErrorHandlerType = HandlerWebhook },
		"webhook.format": func(c *Config) {
			c.JobErrorHandlerType = HandlerWebhook
			c.Props = p("webhook.url", "http://h", "webhook.format", "fax")
		},
		"jobErrorHandlerType": func(c *Config) { c.JobErrorHandlerType = "PANIC" },
		"sdk.protocol":        func(c *Config) { c.Props = p("sdk.protocol", "grpc") },
		"preemptible is for TRANSIENT": func(c *Config) {
			c.JobExecutionType, c.Cron, c.Preemptible = Daemon, "0/5 * * * * ?", true
		},
	}
	for want, mod := range bad {
		c := validJob()
		mod(&c)
		if err := c.Validate(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
}

func TestOnlyHTTPJobsMayNameNoApp(t *testing.T) {
	j := Default()
	j.JobName, j.JobType, j.Props = "h", TypeHTTP, map[string]string{"http.url": "http://svc/run"}
	if err := j.Validate(); err != nil {
		t.Fatalf("HTTP job without app: %v", err)
	}
	if j.ExecutorApp() != app.HTTPOnlyName || j.NeedsPackage() {
		t.Fatalf("ExecutorApp %q NeedsPackage %v", j.ExecutorApp(), j.NeedsPackage())
	}
	// Another namespace's (its key "pay~h") runs in that namespace's own.
	pay := j
	pay.JobName = "pay~h"
	if a := pay.ExecutorApp(); a != "pay~"+app.HTTPOnlyName || !IsHTTPApp(a) || AppOf(pay, nil).AppName != a || IsHTTPApp("pay~etl") {
		t.Fatalf("pay's HTTP job: ExecutorApp %q, AppOf %q", a, AppOf(pay, nil).AppName)
	}
	for _, typ := range []JobType{TypeApp, TypeScript} {
		j.JobType, j.Props = typ, map[string]string{"script.command.line": "true"}
		if err := j.Validate(); err == nil || !strings.Contains(err.Error(), "appName is required") {
			t.Fatalf("jobType %q without app: %v", typ, err)
		}
	}
	j.AppName = "a"
	if j.ExecutorApp() != "a" || j.JobType != TypeScript || j.NeedsPackage() {
		t.Fatal("a SCRIPT job runs no package")
	}
}

func TestACronThatNeverFiresIsInvalid(t *testing.T) {
	j := Default()
	j.JobName, j.AppName = "j", "a"
	for _, expr := range []string{"0 0 0 30 2 ?", "0 0 0 31 4,6,9,11 ?", "0 0 0 ? 2 2#5 2026"} {
		j.Cron = expr
		if err := j.Validate(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "never fires") {
			t.Errorf("%s: %v, want never fires", expr, err)
		}
	}
	j.Cron = "0 0 0 1 1 ? 2020" // fired once, never again
	if err := j.Validate(); err != nil {
		t.Fatalf("a past year is a valid expression: %v", err)
	}
	now := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	if err := j.CheckFires(now, time.UTC); err == nil || !strings.Contains(err.Error(), "never fires after 2024-03-01") {
		t.Fatalf("CheckFires after its year = %v", err)
	}
	j.Cron = "0 0 0 29 2 ?"
	if err := j.CheckFires(now, time.UTC); err != nil {
		t.Fatalf("leap days fire: %v", err)
	}
}

// Task ids carry version 7 UUIDs: unique, and with the time they were
// made (to the millisecond) in their first 48 bits.
func TestNewUUIDIsTimeOrdered(t *testing.T) {
	before := time.Now().Truncate(time.Millisecond)
	u := NewUUID()
	after := time.Now()
	if len(u) != 36 || u[14] != '7' || !strings.ContainsRune("89ab", rune(u[19])) {
		t.Fatalf("%q is not a version 7 UUID", u)
	}
	at, ok := UUIDTime(u)
	if !ok || at.Before(before) || at.After(after) {
		t.Fatalf("UUIDTime(%q) = %v, %v; made between %v and %v", u, at, ok, before, after)
	}
	seen := map[string]bool{}
	for range 1000 {
		v := NewUUID()
		if seen[v] {
			t.Fatalf("%q made twice", v)
		}
		seen[v] = true
	}
	for _, s := range []string{"", "u1", "0b4e3a2c-9f1d-4c5e-8a7b-6d5c4b3a2f10", "0b4e3a2c-9f1d-7c5e-8a7b-6d5c4b3a2f1", "zb4e3a2c-9f1d-7c5e-8a7b-6d5c4b3a2f10"} {
		if _, ok := UUIDTime(s); ok {
			t.Errorf("UUIDTime(%q) found a time", s)
		}
	}
}

// A SIMPLE or DATAFLOW job names its Java class (or a Spring bean), runs the
// app's package as jobType "" does, and the guide's older props.jobClass
// still names the class.
func TestJavaJobs(t *testing.T) {
	for _, mod := range []func(*Config){
		func(c *Config) { c.JobType, c.JobClass = TypeSimple, "com.example.MyJob" },
		func(c *Config) { c.JobType, c.JobClass = TypeDataflow, "com.example.Outer$Inner" },
		func(c *Config) {
			c.JobType, c.BeanName, c.ApplicationContext = TypeSimple, "myJob", "META-INF/applicationContext.xml"
		},
		func(c *Config) { c.JobClass = "MyJob" },
	} {
		c := validJob()
		mod(&c)
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
		if !c.NeedsPackage() {
			t.Errorf("%s job needs no package", c.JobType)
		}
	}
	c := validJob()
	c.Props = map[string]string{"jobClass": "com.example.Old"}
	if got := c.JavaClass(); got != "com.example.Old" {
		t.Errorf("JavaClass from props = %q", got)
	}
	c.JobClass = "com.example.New"
	if got := c.JavaClass(); got != "com.example.New" {
		t.Errorf("JavaClass = %q", got)
	}
}

// A description past MaxDescriptionBytes (a 900 KB paste) is refused.
func TestValidateBoundsTheDescription(t *testing.T) {
	c := Default()
	c.JobName, c.AppName, c.Cron = "nightly", "app", "0 0 2 * * ?"
	c.Description = strings.Repeat("x", MaxDescriptionBytes)
	if err := c.Validate(); err != nil {
		t.Fatalf("a description at the bound: %v", err)
	}
	c.Description += "x"
	if err := c.Validate(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "description is 8193 bytes, at most 8192") {
		t.Fatalf("a description past the bound: %v", err)
	}
}
