package executor

import (
	"context"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/executor/fakeagent"
)

func TestUnconfined(t *testing.T) {
	const ok = "Name:\tx\nCapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n" +
		"CapBnd:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\n"
	if why := unconfined(ok); why != "" {
		t.Fatalf("a confined status refused: %s", why)
	}
	for name, status := range map[string]string{
		"no_new_privs off": strings.Replace(ok, "NoNewPrivs:\t1", "NoNewPrivs:\t0", 1),
		"bounding set":     strings.Replace(ok, "CapBnd:\t0000000000000000", "CapBnd:\t000001ffffffffff", 1),
		"effective":        strings.Replace(ok, "CapEff:\t0000000000000000", "CapEff:\t0000000000000400", 1),
		"no field":         "Name:\tx\n",
	} {
		if unconfined(status) == "" {
			t.Errorf("%s: accepted", name)
		}
	}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == ConfinedEnv {
				return v
			}
			return ""
		}
	}
	if why := confinement(env("")); why != "" {
		t.Errorf("an executor not started as a tenant's checked: %s", why)
	}
}

// A tenant's executor that holds a privilege fails every task it is given,
// saying why, and runs nothing of it.
func TestRefusingExecutorFailsTasks(t *testing.T) {
	ran := make(chan struct{}, 1)
	h := startRunner(t, true, Options{Refuse: "the executor has privileges"}, signalRunner(ran))
	h.agent.Send(fakeagent.Launch("t1", nil))
	us := h.updates(t, 1)
	if got := states(us); got != "t1:TASK_FAILED" || !strings.Contains(us[0].Status.GetMessage(), "privileges") {
		t.Fatalf("updates %s: %s", got, us[0].Status.GetMessage())
	}
	select {
	case <-ran:
		t.Fatal("the task ran")
	default:
	}
}

// signalRunner says on its channel that a task ran.
type signalRunner chan struct{}

func (s signalRunner) Run(context.Context, string, []byte, Hooks) Outcome {
	s <- struct{}{}
	return Outcome{State: Finished}
}
