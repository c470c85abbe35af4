//go:build e2e

package e2e

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// A scheduler on a simulated cluster (mesos-local --sim-agents, the
// benchmark's cluster): a 20-shard job whose shards fit one per agent runs
// once on 20 distinct simulated agents and finishes through the real
// offer, launch, status update and acknowledgement paths.
func TestJobRunsOnSimulatedCluster(t *testing.T) {
	t.Parallel()
	ml := startMesosLocalWith(t, filepath.Join(t.TempDir(), "mesos"), harness.FreePort(t), "--sim-agents", "20",
		"--sim-agent-cpus", "1", "--sim-agent-mem-mb", "1024", "--sim-task-duration", "50ms-200ms", "--sim-seed", "1")
	s := startScheduler(t, onMesos(ml))
	s.publishApp("simapp", fileURL(recorderTGZ), "bin/record.sh", true) // never fetched: nothing runs
	j := recorderJob("spread", "simapp", t.TempDir(), 20)
	j.CPUCount = 0.5 // with the app's executor (0.1) one shard per 1-cpu agent
	s.registerJob(j)
	s.trigger("spread")
	eventually(t, waitLong, func() bool { return len(finishedOn(t, ml.url)) == 20 && s.idle("spread") },
		"20 shards to finish on the simulated agents (finished on: %v)", late(func() any { return finishedOn(t, ml.url) }))
	hosts := map[string]bool{}
	for _, h := range finishedOn(t, ml.url) {
		hosts[h] = true
	}
	if len(hosts) != 20 {
		t.Fatalf("shards finished on %d distinct agents (%v), want 20", len(hosts), hosts)
	}
	if failed := s.failedTasks("spread"); len(failed) != 0 {
		t.Fatalf("failed tasks: %v", failed)
	}
}

// finishedOn maps each TASK_FINISHED task mesos-local lists to the host
// name of its agent.
func finishedOn(t testing.TB, url string) map[string]string {
	t.Helper()
	resp, err := http.Get(url + "/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Slaves []struct {
			ID       string `json:"id"`
			Hostname string `json:"hostname"`
		} `json:"slaves"`
		Frameworks []struct {
			Executors []struct {
				Completed []struct {
					ID      string `json:"id"`
					State   string `json:"state"`
					SlaveID string `json:"slave_id"`
				} `json:"completed_tasks"`
			} `json:"executors"`
		} `json:"frameworks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	host := map[string]string{}
	for _, a := range st.Slaves {
		host[a.ID] = a.Hostname
	}
	out := map[string]string{}
	for _, fw := range st.Frameworks {
		for _, e := range fw.Executors {
			for _, tk := range e.Completed {
				if tk.State == "TASK_FINISHED" && strings.HasPrefix(host[tk.SlaveID], "sim-") {
					out[tk.ID] = host[tk.SlaveID]
				}
			}
		}
	}
	return out
}
