//go:build e2e

package realmesos

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// mesosOpts shape a real Mesos cluster for one test.
type mesosOpts struct {
	// zk, when set (zk://host:port/path), makes the masters elect a leader through ZooKeeper
	// (--zk, --quorum=1) and the agent find it there.
	zk string
	// masters is how many masters to start (default 1; more than one needs zk).
	masters int
	// credentials (principal → secret) turn on HTTP Basic framework authentication
	// (--authenticate_http_frameworks --http_framework_authenticators=basic --credentials).
	credentials map[string]string
	// resources of the agent, as Mesos writes them (default cpus:2;mem:4096;disk:10240;ports:[31000-32000]).
	resources string
	// masterFlags are added to every master's command line.
	masterFlags []string
}

// mesosCluster is a real Mesos master (or several) and one agent on 127.0.0.1, stopped at cleanup
// together with everything still running in the agent's sandboxes.
type mesosCluster struct {
	t       *testing.T
	dir     string
	opts    mesosOpts
	masters []*proc
	agent   *proc
	agents  int // agents started so far: each new one has its own work directory (replaceAgent)
}

// startMesos starts the masters and the agent and waits until the agent is registered with the
// leading master. The logs are printed when the test fails.
func startMesos(t *testing.T, o mesosOpts) *mesosCluster {
	t.Helper()
	requireMesos(t)
	if o.masters <= 0 {
		o.masters = 1
	}
	if o.masters > 1 && o.zk == "" {
		t.Fatal("startMesos: several masters need zk")
	}
	if o.resources == "" {
		o.resources = "cpus:2;mem:4096;disk:10240;ports:[31000-32000]"
	}
	c := &mesosCluster{t: t, dir: t.TempDir(), opts: o}
	t.Cleanup(func() {
		c.stop()
		if t.Failed() {
			for _, p := range append(c.masters, c.agent) {
				if p != nil {
					t.Logf("%s log (%s):\n%s", p.Name, p.LogPath, harness.Tail(p.Log(), 60))
				}
			}
		}
	})
	for range o.masters {
		c.startMaster()
	}
	c.agent = c.startAgent()
	eventually(t, waitLong, func() bool { return c.activeAgents() >= 1 }, "the agent to register with the leading master")
	return c
}

func (c *mesosCluster) startMaster() *proc {
	c.t.Helper()
	i := len(c.masters)
	port := harness.FreePort(c.t)
	args := []string{"--ip=127.0.0.1", "--hostname=127.0.0.1", "--port=" + strconv.Itoa(port),
		"--work_dir=" + filepath.Join(c.dir, fmt.Sprintf("master%d", i)), "--registry=in_memory"}
	if c.opts.zk != "" {
		args = append(args, "--zk="+c.opts.zk, "--quorum=1")
	}
	if len(c.opts.credentials) > 0 {
		args = append(args, "--authenticate_http_frameworks", "--http_framework_authenticators=basic",
			"--credentials="+c.writeCredentials())
	}
	args = append(args, c.opts.masterFlags...)
	p := startProc(c.t, fmt.Sprintf("master%d", i), filepath.Join(mesosHome, "bin/mesos-master"), c.dir, args)
	p.port = port
	c.masters = append(c.masters, p)
	return p
}

func (c *mesosCluster) startAgent() *proc {
	c.t.Helper()
	c.agents++
	return c.startAgentOn(harness.FreePort(c.t))
}

// restartAgent starts the agent again on its work directory and port: it recovers and registers
// again under its agent id.
func (c *mesosCluster) restartAgent() *proc {
	c.t.Helper()
	return c.startAgentOn(c.agent.port)
}

func (c *mesosCluster) startAgentOn(port int) *proc {
	c.t.Helper()
	master := c.opts.zk
	if master == "" {
		master = "127.0.0.1:" + strconv.Itoa(c.masters[0].port)
	}
	args := []string{"--master=" + master, "--ip=127.0.0.1", "--hostname=127.0.0.1", "--port=" + strconv.Itoa(port),
		"--work_dir=" + c.agentDir(), "--fetcher_cache_dir=" + c.fetchCacheDir(), "--launcher=posix",
		"--isolation=posix/cpu,posix/mem", "--no-systemd_enable_support", "--resources=" + c.opts.resources,
		"--launcher_dir=" + filepath.Join(mesosHome, "libexec/mesos")}
	p := startProc(c.t, "agent", filepath.Join(mesosHome, "bin/mesos-agent"), c.dir, args)
	p.port = port
	return p
}

func (c *mesosCluster) writeCredentials() string {
	type cred struct {
		Principal string `json:"principal"`
		Secret    string `json:"secret"`
	}
	var f struct {
		Credentials []cred `json:"credentials"`
	}
	for p, s := range c.opts.credentials {
		f.Credentials = append(f.Credentials, cred{p, s})
	}
	b, _ := json.Marshal(f)
	path := filepath.Join(c.dir, "credentials.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		c.t.Fatal(err)
	}
	return path
}

// agentDir is the work directory of the current agent: agent, then agent2, agent3, … for the
// agents replaceAgent starts after it.
func (c *mesosCluster) agentDir() string {
	if c.agents <= 1 {
		return filepath.Join(c.dir, "agent")
	}
	return filepath.Join(c.dir, "agent"+strconv.Itoa(c.agents))
}
func (c *mesosCluster) fetchCacheDir() string { return filepath.Join(c.dir, "fetch") }

// url is the base URL of master i; masterURL that of the first master.
func (c *mesosCluster) url(i int) string {
	return "http://127.0.0.1:" + strconv.Itoa(c.masters[i].port)
}
func (c *mesosCluster) masterURL() string { return c.url(0) }

// masterState is the part of a master's /state the tests read.
type masterState struct {
	Leader          string           `json:"leader"` // pid of the leading master, master@127.0.0.1:PORT
	ActivatedSlaves float64          `json:"activated_slaves"`
	Frameworks      []frameworkState `json:"frameworks"`
}

type frameworkState struct {
	ID              string  `json:"id"`
	Name            string  `json:"name"`
	Active          bool    `json:"active"`
	Checkpoint      bool    `json:"checkpoint"`
	FailoverTimeout float64 `json:"failover_timeout"`
	Tasks           []struct {
		ID    string `json:"id"`
		State string `json:"state"`
	} `json:"tasks"`
}

// state reads /state of master i (false when it does not answer).
func (c *mesosCluster) state(i int) (masterState, bool) {
	var st masterState
	resp, err := httpClient.Get(c.url(i) + "/state")
	if err != nil {
		return st, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil {
		return st, false
	}
	return st, true
}

// leader is the index of the leading master (-1 when none answers as leader).
func (c *mesosCluster) leader() int {
	for i, m := range c.masters {
		if m.exited() {
			continue
		}
		if st, ok := c.state(i); ok && st.Leader == "master@127.0.0.1:"+strconv.Itoa(m.port) {
			return i
		}
	}
	return -1
}

func (c *mesosCluster) activeAgents() int {
	i := c.leader()
	if i < 0 {
		return 0
	}
	st, _ := c.state(i)
	return int(st.ActivatedSlaves)
}

// activeFrameworks lists the names of the frameworks subscribed to the leading master.
func (c *mesosCluster) activeFrameworks() []string {
	i := c.leader()
	if i < 0 {
		return nil
	}
	st, _ := c.state(i)
	var out []string
	for _, f := range st.Frameworks {
		if f.Active {
			out = append(out, f.Name)
		}
	}
	return out
}

// masterLog is every master's log, concatenated.
func (c *mesosCluster) masterLog() string {
	var b strings.Builder
	for _, m := range c.masters {
		b.WriteString(m.Log())
	}
	return b.String()
}

// stop ends the agent and the masters and kills what still runs in the agent's sandboxes
// (with the posix launcher, containers outlive the agent by design), as the build's stop.sh does.
func (c *mesosCluster) stop() {
	if c.agent != nil {
		c.agent.stop()
	}
	for _, m := range c.masters {
		m.stop()
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cwd, err := os.Readlink(filepath.Join(p, "cwd"))
		if err != nil || !strings.HasPrefix(cwd, filepath.Join(c.dir, "agent")) { // every agent's sandboxes
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(p)); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// sandboxFiles lists the files named name in the agent's executor sandboxes (one per executor
// run; the runs/latest links are skipped).
func (c *mesosCluster) sandboxFiles(name string) []string {
	files, _ := filepath.Glob(filepath.Join(c.agentDir(), "slaves/*/frameworks/*/executors/*/runs/*", name))
	out := files[:0]
	for _, f := range files {
		if filepath.Base(filepath.Dir(f)) != "latest" {
			out = append(out, f)
		}
	}
	return out
}
