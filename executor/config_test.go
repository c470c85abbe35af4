package executor

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCacheDirWithoutHome: under a real Mesos agent the executor has no HOME; its default
// cache is then an absolute directory shared on the host, never a path relative to the sandbox
// (where it would collide with the fetched executor binary, ./elasticjob-executor).
func TestCacheDirWithoutHome(t *testing.T) {
	t.Setenv("HOME", "")
	t.Setenv("XDG_CACHE_HOME", "")
	env := map[string]string{"MESOS_AGENT_ENDPOINT": "127.0.0.1:5051", "MESOS_FRAMEWORK_ID": "fw",
		"MESOS_EXECUTOR_ID": "app@-@agent", "MESOS_SANDBOX": t.TempDir()}
	s, err := ParseSettings(nil, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(s.CacheDir) || filepath.Base(s.CacheDir) != "elasticjob-executor" {
		t.Fatalf("CacheDir = %q, want an absolute …/elasticjob-executor", s.CacheDir)
	}
}

func TestSettingsForIsolationCacheAndGC(t *testing.T) {
	env := map[string]string{
		"MESOS_AGENT_ENDPOINT": "127.0.0.1:5051", "MESOS_FRAMEWORK_ID": "f", "MESOS_EXECUTOR_ID": "e", "MESOS_SANDBOX": "/tmp/s",
		"ELASTICJOB_CGROUP": "v1:/elasticjob/S0/c1", "ELASTICJOB_CGROUP_PIDS_MAX": "64", "ELASTICJOB_CGROUP_CPU_QUOTA": "true",
		"ELASTICJOB_CACHE_MAX_SIZE": "512MiB", "ELASTICJOB_GC_DELAY": "2days", "ELASTICJOB_GC_DISK_HEADROOM": "0.2",
	}
	s, err := ParseSettings(nil, func(k string) string { return env[k] }, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if s.Cgroup != "v1:/elasticjob/S0/c1" || s.CgroupPidsMax != 64 || !s.CgroupCPUQuota || s.CacheMaxSize != 512<<20 ||
		s.GCDelay != 48*time.Hour || s.GCDiskHeadroom != 0.2 {
		t.Fatalf("%+v", s)
	}
	env["ELASTICJOB_CGROUP_PIDS_MAX"], env["ELASTICJOB_GC_DISK_HEADROOM"] = "many", "1.5"
	if _, err := ParseSettings(nil, func(k string) string { return env[k] }, os.Stderr); err == nil {
		t.Fatal("bad pids max and headroom accepted")
	}
	delete(env, "ELASTICJOB_CGROUP_PIDS_MAX")
	delete(env, "ELASTICJOB_GC_DISK_HEADROOM")
	delete(env, "ELASTICJOB_CACHE_MAX_SIZE")
	delete(env, "ELASTICJOB_GC_DELAY")
	delete(env, "ELASTICJOB_CGROUP_CPU_QUOTA")
	s, err = ParseSettings([]string{"--gc-disk-headroom", "0.3"}, func(k string) string { return env[k] }, os.Stderr)
	if err != nil || s.CacheMaxSize != 2<<30 || s.GCDelay != 7*24*time.Hour || s.GCDiskHeadroom != 0.3 || s.CgroupPidsMax != 0 || s.CgroupCPUQuota {
		t.Fatalf("defaults: %+v %v", s, err)
	}
}

// TestAgentCodec: JSON unless the agent asks for protobuf (the embedded
// agent does, a Mesos agent does not); anything else is refused by name.
func TestAgentCodec(t *testing.T) {
	env := map[string]string{"MESOS_AGENT_ENDPOINT": "127.0.0.1:5051", "MESOS_FRAMEWORK_ID": "f", "MESOS_EXECUTOR_ID": "e", "MESOS_SANDBOX": "/tmp/s"}
	getenv := func(k string) string { return env[k] }
	for v, want := range map[string]bool{"": false, "json": false, "protobuf": true} {
		env[AgentCodecEnv] = v
		if s, err := ParseSettings(nil, getenv, io.Discard); err != nil || s.Protobuf != want {
			t.Errorf("%s=%q: protobuf %v, %v; want %v", AgentCodecEnv, v, s.Protobuf, err, want)
		}
	}
	env[AgentCodecEnv] = "xml"
	if _, err := ParseSettings(nil, getenv, io.Discard); err == nil || !strings.Contains(err.Error(), `ELASTICJOB_AGENT_CODEC: "xml" is not a codec`) {
		t.Fatalf("err = %v", err)
	}
}
