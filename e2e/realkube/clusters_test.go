//go:build e2e

package realkube

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// realMesos starts a real Mesos 1.11 master and agent (posix launcher) on 127.0.0.1 beside
// the tier's Kubernetes, from the build at ../shared/mesos-1.11 (EJ_MESOS_HOME); the test is
// skipped without one. It returns the master's URL.
func realMesos(t *testing.T) string {
	t.Helper()
	home, err := harness.FindBuild("EJ_MESOS_HOME", []string{"../../../shared/mesos-1.11"}, "bin/mesos-master", "bin/mesos-agent")
	if err != nil {
		t.Fatal(err)
	}
	if home == "" {
		t.Skip("no Mesos build at ../shared/mesos-1.11 (set EJ_MESOS_HOME): the Mesos half of this test has nothing to run on")
	}
	if out, err := exec.Command("ldd", filepath.Join(home, "bin/mesos-master")).CombinedOutput(); err == nil && strings.Contains(string(out), "not found") {
		// The build's start.sh installs the libraries it needs (apt-get) once.
		dir := t.TempDir()
		if out, err := exec.Command(filepath.Join(home, "start.sh"), dir).CombinedOutput(); err != nil {
			t.Fatalf("installing Mesos' libraries with %s/start.sh: %v\n%s", home, err, out)
		}
		_ = exec.Command(filepath.Join(home, "stop.sh"), dir).Run()
	}
	dir := t.TempDir()
	mport, aport := harness.FreePort(t), harness.FreePort(t)
	master := harness.Start(t, "mesos-master", filepath.Join(dir, "master.log"), exec.Command(filepath.Join(home, "bin/mesos-master"),
		"--ip=127.0.0.1", "--hostname=127.0.0.1", "--port="+strconv.Itoa(mport), "--work_dir="+filepath.Join(dir, "master"), "--registry=in_memory"))
	agentDir := filepath.Join(dir, "agent")
	agent := harness.Start(t, "mesos-agent", filepath.Join(dir, "agent.log"), exec.Command(filepath.Join(home, "bin/mesos-agent"),
		"--master=127.0.0.1:"+strconv.Itoa(mport), "--ip=127.0.0.1", "--hostname=127.0.0.1", "--port="+strconv.Itoa(aport),
		"--work_dir="+agentDir, "--fetcher_cache_dir="+filepath.Join(dir, "fetch"), "--launcher=posix",
		"--isolation=posix/cpu,posix/mem", "--no-systemd_enable_support", "--resources=cpus:2;mem:4096;disk:10240;ports:[31000-32000]",
		"--launcher_dir="+filepath.Join(home, "libexec/mesos")))
	t.Cleanup(func() {
		agent.Stop(t)
		master.Stop(t)
		harness.KillSandboxProcs(agentDir) // executors and tasks outlive a stopped agent
		if t.Failed() {
			t.Logf("mesos-master log:\n%s\nmesos-agent log:\n%s", harness.Tail(master.Log(), 40), harness.Tail(agent.Log(), 40))
		}
	})
	url := "http://127.0.0.1:" + strconv.Itoa(mport)
	eventually(t, waitLong, func() bool {
		resp, err := httpClient.Get(url + "/state")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var st struct {
			Activated float64 `json:"activated_slaves"`
		}
		return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&st) == nil && st.Activated >= 1
	}, "the Mesos agent to register")
	return url
}

// TestCronMovesBetweenMesosAndKubernetes: one scheduler on a real Mesos cluster and this
// tier's real Kubernetes at once (clusters_file). A cron job runs on Mesos, is moved to
// Kubernetes while it fires, then back to Mesos: every cron instant between its first run
// and its last ran exactly once, each on the cluster the job named when it fired; the
// listing shows both clusters.
func TestCronMovesBetweenMesosAndKubernetes(t *testing.T) {
	requireK8s(t)
	mesosURL := realMesos(t)
	ns := namespace(t)
	list := filepath.Join(t.TempDir(), "clusters.yaml")
	doc := "clusters:\n  - {name: mesos-dc1, engine: mesos, mesos_url: \"" + mesosURL + "\"}\n" +
		"  - {name: k8s-prod, engine: kubernetes, kube_config: " + kubeconfig + ", kube_namespace: " + ns + "}\n"
	if err := os.WriteFile(list, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	port := harness.FreePort(t)
	dir := t.TempDir()
	args := []string{"--data-dir", filepath.Join(dir, "data"), "--http-port", strconv.Itoa(port), "--clusters-file", list,
		"--kube-host-network", "true", "--kube-image-pull-policy", "Never", "--kube-executor-image", executorImage,
		"--offer-refuse-seconds", "1s", "--reconcile-wait", "5s"}
	s := &scheduler{Proc: harness.Start(t, "scheduler", filepath.Join(dir, "scheduler.log"), exec.Command(schedulerBin, args...)), t: t,
		base: "http://127.0.0.1:" + strconv.Itoa(port), ns: ns}
	t.Cleanup(func() {
		s.Stop(t)
		if t.Failed() {
			t.Logf("scheduler log (%s):\n%s", s.LogPath, harness.Tail(s.Log(), 150))
		}
	})
	s.AwaitReady(t, waitLong, pollEvery, harness.Healthy(httpClient, s.base), "the scheduler to answer /healthz")
	s.publishApp("rec", false)
	const every = 5 * time.Second
	j := transient("mover", "rec", 1, "")
	j["cron"], j["misfire"], j["clusters"] = "*/5 * * * * ?", true, []string{"mesos-dc1"}
	s.register(j)

	on := func(cluster string) int { return len(s.runsOn("mover", cluster)) }
	eventually(t, waitLong, func() bool { return on("mesos-dc1") >= 2 }, "two fires on Mesos")
	j["clusters"] = []string{"k8s-prod"}
	s.must(http.MethodPut, "/api/job/update", map[string]any(j))
	eventually(t, waitLong, func() bool { return on("k8s-prod") >= 2 }, "two fires on Kubernetes after the move")
	mesosBefore := on("mesos-dc1")
	j["clusters"] = []string{"mesos-dc1"}
	s.must(http.MethodPut, "/api/job/update", map[string]any(j))
	eventually(t, waitLong, func() bool { return on("mesos-dc1") >= mesosBefore+2 }, "two fires on Mesos again")

	var views []struct {
		Name   string `json:"name"`
		Engine string `json:"engine"`
		Agents int    `json:"agents"`
	}
	if err := json.Unmarshal(s.must(http.MethodGet, "/api/operate/clusters", nil), &views); err != nil {
		t.Fatal(err)
	}
	if len(views) != 2 || views[0].Name != "mesos-dc1" || views[0].Agents != 1 || views[1].Name != "k8s-prod" || views[1].Engine != "kubernetes" || views[1].Agents < 1 {
		t.Errorf("clusters %+v", views)
	}
	s.must(http.MethodDelete, "/api/job/deregister", "mover")
	eventually(t, waitLong, func() bool { return len(s.runningOf("mover")) == 0 }, "mover's last run to end")

	var at []time.Time
	for _, e := range s.nominalRuns("mover") {
		at = append(at, e)
	}
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(at); i++ {
		if d := at[i].Sub(at[i-1]); d != every {
			t.Errorf("fires %s and %s: %v apart, want %v (an instant run twice or missed)", at[i-1].Format(time.TimeOnly), at[i].Format(time.TimeOnly), d, every)
		}
	}
	if len(at) < 6 {
		t.Errorf("%d runs with a cron instant, want at least 6", len(at))
	}
}

// runsOn lists the job's task ids whose agent (in the status history) is of cluster.
func (s *scheduler) runsOn(job, cluster string) []string {
	s.t.Helper()
	var page struct {
		Rows []struct {
			TaskID  string `json:"taskId"`
			SlaveID string `json:"slaveId"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(s.must(http.MethodGet, "/api/job/events/statusTraces?per_page=1000&jobName="+job, nil), &page); err != nil {
		s.t.Fatal(err)
	}
	var out []string
	for _, r := range page.Rows {
		if strings.HasPrefix(r.SlaveID, cluster+":") && !slices.Contains(out, r.TaskID) {
			out = append(out, r.TaskID)
		}
	}
	return out
}

// nominalRuns lists the cron instants of the job's executions.
func (s *scheduler) nominalRuns(job string) []time.Time {
	s.t.Helper()
	var page struct {
		Rows []struct {
			NominalAt *time.Time `json:"nominalAt"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(s.must(http.MethodGet, "/api/job/events/executions?per_page=1000&jobName="+job, nil), &page); err != nil {
		s.t.Fatal(err)
	}
	var out []time.Time
	for _, r := range page.Rows {
		if r.NominalAt != nil {
			out = append(out, *r.NominalAt)
		}
	}
	return out
}

// runningOf lists the job's running tasks.
func (s *scheduler) runningOf(job string) []string {
	s.t.Helper()
	var all []struct {
		JobName string `json:"jobName"`
		TaskID  string `json:"taskId"`
	}
	if err := json.Unmarshal(s.must(http.MethodGet, "/api/job/tasks/running", nil), &all); err != nil {
		s.t.Fatal(err)
	}
	var out []string
	for _, r := range all {
		if r.JobName == job {
			out = append(out, r.TaskID)
		}
	}
	return out
}
