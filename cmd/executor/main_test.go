package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestHelpDocumentsFlags(t *testing.T) {
	var out bytes.Buffer
	if err := run(t.Context(), []string{"--help"}, nil, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-cache-dir", "ELASTICJOB_CACHE_DIR", "-max-download", "1GiB", "-fetch-timeout",
		"-max-extracted", "4GiB", "-kill-grace", "MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD", "MESOS_AGENT_ENDPOINT"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, out.String())
		}
	}
}

func TestMissingMesosEnvironment(t *testing.T) {
	var out bytes.Buffer
	err := run(t.Context(), nil, []string{"ELASTICJOB_CACHE_DIR=" + t.TempDir()}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "MESOS_AGENT_ENDPOINT is not set") {
		t.Fatalf("err = %v", err)
	}
}

func TestBadFlagValues(t *testing.T) {
	var out bytes.Buffer
	env := []string{"MESOS_AGENT_ENDPOINT=127.0.0.1:1", "MESOS_FRAMEWORK_ID=f", "MESOS_EXECUTOR_ID=e", "MESOS_SANDBOX=" + t.TempDir()}
	err := run(t.Context(), []string{"-max-download", "lots", "-kill-grace", "soon"}, env, &out, &out)
	if err == nil || !strings.Contains(err.Error(), `max-download: bad size "lots"`) || !strings.Contains(err.Error(), `kill-grace: bad duration "soon"`) {
		t.Fatalf("err = %v", err)
	}
}
