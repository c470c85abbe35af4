package ha

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
)

// haCluster is the cluster shape on this machine for the ha scenario: a
// 3-server ZooKeeper ensemble (EJ_TEST_ZK_ENSEMBLE, or one of its own
// started with scripts/services.sh), one bin/mesos-local and n schedulers
// on one registry namespace; or, on etcd (startHAEtcd), n schedulers each
// with an etcd member of its own and mesos-local, nothing else.
type haCluster struct {
	o        options
	dir      string
	etcd     []etcdMemberPorts // registry=etcd: each scheduler's member
	zk       string
	ns       string
	session  time.Duration
	mesos    *exec.Cmd
	mesosEnd chan struct{} // closed when mesos-local has exited
	mesosURL string
	scheds   []*bench.Scheduler
	ensemble string // the directory of an ensemble it started ("" for a shared one)
}

var mesosLocalLine = regexp.MustCompile(`(?m)^mesos-local: listening on (http://127\.0\.0\.1:\d+)$`)

// startHACluster starts the cluster; close stops all of it.
func startHACluster(ctx context.Context, o options, dir string, session time.Duration, n int) (*haCluster, error) {
	c := &haCluster{o: o, dir: dir, session: session, ns: fmt.Sprintf("ejbench-ha-%d", time.Now().UnixNano()),
		zk: os.Getenv("EJ_TEST_ZK_ENSEMBLE")}
	if c.zk == "" {
		c.ensemble = filepath.Join(dir, "zk")
		bench.Logf("ha: starting a ZooKeeper ensemble in %s (set EJ_TEST_ZK_ENSEMBLE to use a running one)", c.ensemble)
		if out, err := exec.CommandContext(ctx, "bash", "scripts/services.sh", "start-ensemble", c.ensemble).CombinedOutput(); err != nil {
			return c, fmt.Errorf("start a ZooKeeper ensemble: %v\n%s", err, out)
		}
		env, err := os.ReadFile(filepath.Join(c.ensemble, "ensemble.env"))
		if err != nil {
			return c, err
		}
		m := regexp.MustCompile(`EJ_TEST_ZK_ENSEMBLE=(\S+)`).FindSubmatch(env)
		if m == nil {
			return c, fmt.Errorf("no EJ_TEST_ZK_ENSEMBLE in %s/ensemble.env", c.ensemble)
		}
		c.zk = string(m[1])
	}
	if err := c.startMesos(); err != nil {
		return c, err
	}
	for i := range n {
		if _, err := c.add(i); err != nil {
			return c, err
		}
	}
	return c, nil
}

func (c *haCluster) startMesos() error {
	port, err := bench.FreePort()
	if err != nil {
		return err
	}
	out, err := os.Create(filepath.Join(c.dir, "mesos-local.log"))
	if err != nil {
		return err
	}
	c.mesos = exec.Command(filepath.Join(c.o.BinDir, "mesos-local"), "--port", strconv.Itoa(port),
		"--work-dir", filepath.Join(c.dir, "mesos"), "--cpus", "4", "--mem-mb", "8192")
	c.mesos.Stdout, c.mesos.Stderr = out, out
	if err := c.mesos.Start(); err != nil {
		out.Close()
		return err
	}
	c.mesosEnd = make(chan struct{})
	go func() { _ = c.mesos.Wait(); out.Close(); close(c.mesosEnd) }()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := mesosLocalLine.FindSubmatch([]byte(bench.Tail(out.Name(), 4000))); m != nil {
			c.mesosURL = string(m[1])
			return nil
		}
	}
	return fmt.Errorf("mesos-local printed no URL; log tail:\n%s", bench.Tail(out.Name(), 2000))
}

// add starts scheduler i (its data directory kept across restarts).
func (c *haCluster) add(i int) (*bench.Scheduler, error) {
	p, err := c.spawn(i)
	if err != nil {
		return nil, err
	}
	if _, err := p.WaitHealthy(30 * time.Second); err != nil {
		return nil, err
	}
	return p, nil
}

// spawn starts scheduler i without waiting for it.
func (c *haCluster) spawn(i int) (*bench.Scheduler, error) {
	data := filepath.Join(c.dir, fmt.Sprintf("s%d", i))
	if err := os.MkdirAll(data, 0o750); err != nil {
		return nil, err
	}
	args := []string{"--zk-servers", c.zk, "--zk-namespace", c.ns, "--zk-session-timeout", c.session.String()}
	if c.etcd != nil {
		args = c.etcdArgs(i)
	}
	p, err := bench.StartScheduler(c.o.BinDir, data, append(args, "--mesos-url", c.mesosURL, "--allow-file-app-urls", "true",
		"--event-trace-rdb-driver", "none", "--log-level", "info")...)
	if err != nil {
		return nil, err
	}
	if i < len(c.scheds) {
		c.scheds[i] = p
	} else {
		c.scheds = append(c.scheds, p)
	}
	return p, nil
}

// etcdMemberPorts are one member's client and peer ports.
type etcdMemberPorts struct{ client, peer int }

// startHAEtcd starts mesos-local and n schedulers on etcd, each with its
// member (they bootstrap together: each waits for a quorum).
func startHAEtcd(o options, dir string, n int) (*haCluster, error) {
	c := &haCluster{o: o, dir: dir, session: etcdLeaseTTL}
	for range n {
		cp, err := bench.FreePort()
		if err != nil {
			return c, err
		}
		pp, err := bench.FreePort()
		if err != nil {
			return c, err
		}
		c.etcd = append(c.etcd, etcdMemberPorts{client: cp, peer: pp})
	}
	if err := c.startMesos(); err != nil {
		return c, err
	}
	for i := range n {
		if _, err := c.spawn(i); err != nil {
			return c, err
		}
	}
	for _, p := range c.scheds {
		if _, err := p.WaitHealthy(time.Minute); err != nil {
			return c, err
		}
	}
	return c, nil
}

// etcdLeaseTTL is the election's lease on the etcd shape (the default).
const etcdLeaseTTL = time.Second

func (c *haCluster) etcdArgs(i int) []string {
	var peers []string
	for k, m := range c.etcd {
		peers = append(peers, fmt.Sprintf("s%d=http://127.0.0.1:%d", k, m.peer))
	}
	return []string{"--registry", "etcd", "--etcd-name", fmt.Sprintf("s%d", i), "--etcd-peers", strings.Join(peers, ","),
		"--etcd-client-url", fmt.Sprintf("http://127.0.0.1:%d", c.etcd[i].client), "--etcd-lease-ttl", etcdLeaseTTL.String()}
}

// role asks scheduler i whether it leads.
func (c *haCluster) role(i int) string {
	code, b, err := c.scheds[i].API.Do("GET", "/api/operate/cluster", "", nil)
	if err != nil || code != 200 {
		return ""
	}
	var v struct {
		Role string `json:"role"`
	}
	_ = json.Unmarshal(b, &v)
	return v.Role
}

// leader waits for the one scheduler that says it leads, other than `not`.
func (c *haCluster) leader(not int, timeout time.Duration) (int, error) {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for i := range c.scheds {
			if i != not && c.role(i) == "leader" {
				return i, nil
			}
		}
	}
	return -1, fmt.Errorf("no leader within %v", timeout)
}

// kill9 kills scheduler i and returns when it is gone.
func (c *haCluster) kill9(i int) time.Time {
	p := c.scheds[i]
	_ = p.Cmd.Process.Kill()
	<-p.Exited
	return time.Now()
}

func (c *haCluster) close() {
	for _, p := range c.scheds {
		p.Stop()
	}
	if c.mesosEnd != nil {
		_ = c.mesos.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.mesosEnd:
		case <-time.After(20 * time.Second):
			_ = c.mesos.Process.Kill()
			<-c.mesosEnd
		}
		// Its executors outlive it (for its next start): stop them.
		cleanup := exec.Command(c.mesos.Path, append(c.mesos.Args[1:], "--recover=cleanup")...)
		if out, err := cleanup.CombinedOutput(); err != nil {
			bench.Logf("ha: mesos-local --recover=cleanup: %v\n%s", err, strings.TrimSpace(string(out)))
		}
	}
	if c.ensemble != "" {
		if out, err := exec.Command("bash", "scripts/services.sh", "stop-ensemble", c.ensemble).CombinedOutput(); err != nil {
			bench.Logf("ha: stop the ensemble: %v\n%s", err, strings.TrimSpace(string(out)))
		}
	}
}
