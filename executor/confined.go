package executor

import (
	"fmt"
	"os"
	"strings"
)

// ConfinedEnv is set ("1") by the embedded agent when it runs the
// executor as a tenant (engine/mesos/embedded's tenant init): the
// executor then checks that it holds no privilege before it runs any task.
const ConfinedEnv = "ELASTICJOB_TENANT_CONFINED"

// unconfined says why a process whose /proc/PID/status is status is not
// confined as a tenant's executor must be ("": it is): no_new_privs set
// (a setuid program gains nothing) and no capability permitted,
// effective or in the bounding set.
func unconfined(status string) string {
	want := map[string]string{"NoNewPrivs": "1", "CapPrm": "0000000000000000", "CapEff": "0000000000000000",
		"CapBnd": "0000000000000000"}
	var bad []string
	for _, line := range strings.Split(status, "\n") {
		k, v, _ := strings.Cut(line, ":")
		w, ok := want[k]
		if !ok {
			continue
		}
		if v = strings.TrimSpace(v); v != w {
			bad = append(bad, k+" is "+v)
		}
		delete(want, k)
	}
	for k := range want {
		bad = append(bad, k+" is missing")
	}
	if len(bad) == 0 {
		return ""
	}
	return strings.Join(bad, ", ")
}

// confinement is why this executor refuses every task ("": it runs
// them): it was started as a tenant's, but holds a privilege.
func confinement(getenv func(string) string) string {
	if getenv(ConfinedEnv) == "" {
		return ""
	}
	b, err := os.ReadFile("/proc/self/status")
	why := ""
	if err != nil {
		why = err.Error()
	} else {
		why = unconfined(string(b))
	}
	if why == "" {
		return ""
	}
	return fmt.Sprintf("the executor runs tasks only without privileges, and it has some (%s): the tenant init did not confine it", why)
}
