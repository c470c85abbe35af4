//go:build e2e

package realmesos

import (
	"slices"
	"strings"
	"testing"
)

// TestFrameworkAuthentication: a master that authenticates HTTP frameworks (basic, with a
// credentials file) refuses a wrong secret with 401, which the scheduler reports clearly and
// retries only every 10 s (never the secret in its log); the right secret subscribes, and its
// later calls (ACCEPT, ACKNOWLEDGE) authenticate too, so a job runs.
func TestFrameworkAuthentication(t *testing.T) {
	m := startMesos(t, mesosOpts{credentials: map[string]string{"ej": "right-secret"}})
	bad := startSchedulers(t, 1, schedOpts{mesosURL: m.masterURL(), name: "ej-bad", noWait: true,
		extra: []string{"--mesos-principal", "ej", "--mesos-secret", "wrong-secret"}})[0]
	eventually(t, waitLong, func() bool { return strings.Contains(bad.Log(), "401 Unauthorized") },
		"the scheduler with the wrong secret to report the master's 401")
	line := grepLine(bad.Log(), "401 Unauthorized")
	t.Log("refused:", line)
	for _, want := range []string{"level=ERROR", "mesos_principal, mesos_secret", "retry_in=10s"} {
		if !strings.Contains(line, want) {
			t.Errorf("refusal log line lacks %q: %s", want, line)
		}
	}
	if strings.Contains(bad.Log(), "wrong-secret") {
		t.Error("the scheduler's log shows the secret")
	}

	good := startSchedulers(t, 1, schedOpts{mesosURL: m.masterURL(), name: "ej-good",
		extra: []string{"--mesos-principal", "ej", "--mesos-secret", "right-secret"}})[0]
	eventually(t, waitLong, func() bool { return strings.Contains(m.masterLog(), "Subscribing framework 'ej-good'") },
		"the master to accept the right secret")
	good.publishApp("recorder", recorderURL(), "bin/record.sh")
	out := outDir(t)
	good.registerJob("auth_job", "recorder", "", out, 2)
	good.trigger("auth_job")
	eventually(t, waitLong, func() bool { n := perItem(runsIn(t, out)); return n[0] == 1 && n[1] == 1 },
		"both shards of the authenticated framework to run")

	if fws := m.activeFrameworks(); !slices.Contains(fws, "ej-good") || slices.Contains(fws, "ej-bad") {
		t.Fatalf("active frameworks = %v, want ej-good and not ej-bad", fws)
	}
	if sub := subscribedOf([]*scheduler{bad, good}); len(sub) != 1 || sub[0] != good || strings.Contains(m.masterLog(), "Subscribing framework 'ej-bad'") {
		t.Fatal("the wrong secret subscribed")
	}
}

// grepLine returns the first line of s containing sub.
func grepLine(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}
