package executor

import (
	"io"
	"path/filepath"
	"testing"
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
