package soak

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ejcloud/elasticjob/internal/loopback"
)

// ZK is the cluster shape: a 3-server ZooKeeper ensemble of its own
// (scripts/services.sh), three schedulers electing a leader on it, each
// reaching every ZooKeeper server and mesos-local through proxies of its
// own (so one scheduler can be cut off from the registry or the agents),
// and one mesos-local whose simulated agents run the tasks and append
// each run to the run log (--sim-record). mesos-local holds the run log
// open in append mode: killing it loses no recorded line. History is kept
// in a MariaDB of its own (scripts/services.sh start-mysql), which each
// scheduler reaches through a proxy of its own (so the database can be
// down for all of them).
type ZK struct {
	Bin      string // directory with scheduler and mesos-local
	Services string // scripts/services.sh
	Dir      string
	RunLog   string
	Session  time.Duration
	Seed     uint64
	Log      *slog.Logger
	// Tasks is the simulated task duration (mesos-local --sim-task-duration).
	Tasks string

	ens      string // ensemble dir
	nodes    [3]string
	mesos    *proc
	mesosURL string
	scheds   []*sched
	ns       string
	mysql    string // MariaDB's address
}

type sched struct {
	p     *proc
	base  string
	zk    []*proxy
	mesos *proxy
	db    *proxy // to the history database (nil: none)
}

var _ Shape = (*ZK)(nil)

func (z *ZK) Name() string { return "zk" }

func (z *ZK) services(ctx context.Context, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", append([]string{z.Services}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("soak: services.sh %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

func (z *ZK) Start(ctx context.Context) error {
	z.ens = filepath.Join(z.Dir, "services")
	if err := os.MkdirAll(z.ens, 0o755); err != nil {
		return err
	}
	if err := z.services(ctx, "start-ensemble", z.ens); err != nil {
		return err
	}
	env, err := readEnv(filepath.Join(z.ens, "ensemble.env"))
	if err != nil {
		return err
	}
	for i := range z.nodes {
		z.nodes[i] = env["EJ_TEST_ZK_NODE_"+strconv.Itoa(i+1)]
		if z.nodes[i] == "" {
			return fmt.Errorf("soak: ensemble.env has no EJ_TEST_ZK_NODE_%d", i+1)
		}
	}
	if err := z.services(ctx, "start-mysql", z.ens); err != nil {
		return err
	}
	port, err := os.ReadFile(filepath.Join(z.ens, "mysql.port"))
	if err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	z.mysql = "127.0.0.1:" + strings.TrimSpace(string(port))
	if err := z.startMesos(ctx); err != nil {
		return err
	}
	z.ns = fmt.Sprintf("ej-soak-%d", time.Now().UnixNano())
	for i := range 3 {
		s, err := z.newSched(i)
		if err != nil {
			return err
		}
		z.scheds = append(z.scheds, s)
		if err := s.p.start(); err != nil {
			return err
		}
	}
	for _, s := range z.scheds {
		if err := z.await(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// await waits for a scheduler to answer /healthz, or to exit (an error
// with its log's tail).
func (z *ZK) await(ctx context.Context, s *sched) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if waitHTTP(ctx, s.base+"/healthz", time.Second) == nil {
			return nil
		}
		if !s.p.running() {
			b, _ := os.ReadFile(s.p.log)
			return fmt.Errorf("soak: %s exited: %s", s.p.name, tail(b, 1000))
		}
	}
	return fmt.Errorf("soak: %s did not answer /healthz within 2m", s.p.name)
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

var mesosURLRe = regexp.MustCompile(`mesos-local: listening on (\S+)`)

func (z *ZK) startMesos(ctx context.Context) (err error) {
	z.mesos, z.mesosURL, err = startSimMesos(ctx, z.Bin, z.Dir, z.RunLog, z.Tasks, z.Seed)
	return err
}

// startSimMesos starts mesos-local with simulated agents that append every
// run to runLog, and returns it with its URL.
func startSimMesos(ctx context.Context, bin, dir, runLog, tasks string, seed uint64) (*proc, string, error) {
	port, err := loopback.Port()
	if err != nil {
		return nil, "", err
	}
	if tasks == "" {
		tasks = "200ms-1500ms"
	}
	p := &proc{name: "mesos-local", bin: filepath.Join(bin, "mesos-local"), log: filepath.Join(dir, "mesos-local.log"),
		args: []string{"--port", strconv.Itoa(port), "--work-dir", filepath.Join(dir, "mesos"), "--sim-agents", "4",
			"--sim-agent-cpus", "64", "--sim-agent-mem-mb", "65536", "--sim-task-duration", tasks,
			"--sim-seed", strconv.FormatUint(seed|1, 10), "--sim-record", runLog}}
	if err := p.start(); err != nil {
		return nil, "", err
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(p.log)
		if m := mesosURLRe.FindSubmatch(b); m != nil {
			return p, strings.TrimSuffix(string(m[1]), "/"), nil
		}
		if !sleep(ctx, 100*time.Millisecond) {
			return p, "", ctx.Err()
		}
	}
	return p, "", fmt.Errorf("soak: mesos-local did not print its URL (%s)", p.log)
}

func (z *ZK) newSched(i int) (*sched, error) {
	s := &sched{}
	var zks []string
	for _, n := range z.nodes {
		p, err := newProxy(n)
		if err != nil {
			return nil, err
		}
		s.zk = append(s.zk, p)
		zks = append(zks, p.addr())
	}
	host := strings.TrimPrefix(strings.TrimPrefix(z.mesosURL, "http://"), "https://")
	host, path, _ := strings.Cut(host, "/")
	mp, err := newProxy(host)
	if err != nil {
		return nil, err
	}
	s.mesos = mp
	mesosURL := "http://" + mp.addr()
	if path != "" {
		mesosURL += "/" + path
	}
	port, err := loopback.Port()
	if err != nil {
		return nil, err
	}
	s.base = fmt.Sprintf("http://127.0.0.1:%d", port)
	if s.db, err = newProxy(z.mysql); err != nil {
		return nil, err
	}
	dsn := "ejtest:ejtest_pw@tcp(" + s.db.addr() + ")/elasticjob_test?parseTime=true" // services.sh's test user and database
	name := "s" + strconv.Itoa(i+1)
	s.p = &proc{name: name, bin: filepath.Join(z.Bin, "scheduler"), log: filepath.Join(z.Dir, name+".log"),
		args: []string{"--data-dir", filepath.Join(z.Dir, name), "--http-port", strconv.Itoa(port),
			"--zk-servers", strings.Join(zks, ","), "--zk-namespace", z.ns, "--zk-session-timeout", z.Session.String(),
			"--mesos-url", mesosURL, "--allow-file-app-urls", "true", "--time-zone", "UTC",
			"--event-trace-rdb-driver", "mysql", "--event-trace-rdb-url", dsn, "--log-level", "info"}}
	return s, nil
}

// HistoryAPI is where the history in MariaDB is read ("" before Start or
// on the etcd shape, which keeps none in MariaDB).
func (z *ZK) HistoryAPI() string {
	if z.mysql == "" || len(z.scheds) == 0 {
		return ""
	}
	return z.scheds[0].base
}

// proxies are every proxy in front of s.
func (s *sched) proxies() []*proxy {
	ps := append(append([]*proxy(nil), s.zk...), s.mesos)
	if s.db != nil {
		ps = append(ps, s.db)
	}
	return ps
}

func (z *ZK) APIs() []string {
	out := make([]string, len(z.scheds))
	for i, s := range z.scheds {
		out[i] = s.base
	}
	return out
}

// leader is the scheduler whose /api/operate/cluster says it leads.
func (z *ZK) leader(ctx context.Context) (*sched, error) {
	for _, s := range z.scheds {
		if !s.p.running() {
			continue
		}
		var v struct {
			Role string `json:"role"`
		}
		if getJSON(ctx, s.base+"/api/operate/cluster", &v) == nil && v.Role == "leader" {
			return s, nil
		}
	}
	return nil, errNoLeader
}

func (z *ZK) standby(ctx context.Context, rng *rand.Rand) (*sched, error) {
	l, _ := z.leader(ctx)
	var c []*sched
	for _, s := range z.scheds {
		if s != l && s.p.running() {
			c = append(c, s)
		}
	}
	if len(c) == 0 {
		return nil, fmt.Errorf("soak: no standby running")
	}
	return c[rng.IntN(len(c))], nil
}

func (z *ZK) restart(s *sched) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := s.p.start(); err != nil {
			return err
		}
		return z.await(ctx, s)
	}
}

func (z *ZK) Faults() []FaultKind {
	kill := func(pick func(context.Context, *rand.Rand) (*sched, error)) func(context.Context, *rand.Rand) (func(context.Context) error, string, error) {
		return func(ctx context.Context, rng *rand.Rand) (func(context.Context) error, string, error) {
			s, err := pick(ctx, rng)
			if err != nil {
				return nil, "", err
			}
			s.p.kill()
			return z.restart(s), s.p.name, nil
		}
	}
	leader := func(ctx context.Context, _ *rand.Rand) (*sched, error) { return z.leader(ctx) }
	links := func(name string, zk bool, cut bool, delay time.Duration) func(context.Context, *rand.Rand) (func(context.Context) error, string, error) {
		return func(ctx context.Context, rng *rand.Rand) (func(context.Context) error, string, error) {
			s, err := z.leader(ctx)
			if err != nil {
				return nil, "", err
			}
			ps := []*proxy{s.mesos}
			if zk {
				ps = s.zk
			}
			for _, p := range ps {
				p.set(cut, delay)
			}
			return func(context.Context) error {
				for _, p := range ps {
					p.set(false, 0)
				}
				return nil
			}, s.p.name, nil
		}
	}
	zkNodes := func(n int) func(context.Context, *rand.Rand) (func(context.Context) error, string, error) {
		return func(ctx context.Context, rng *rand.Rand) (func(context.Context) error, string, error) {
			ids := rng.Perm(3)[:n]
			for _, i := range ids {
				if err := z.services(ctx, "kill-zk-node", z.ens, strconv.Itoa(i+1)); err != nil {
					return nil, "", err
				}
			}
			return func(ctx context.Context) error {
				for _, i := range ids {
					if err := z.services(ctx, "start-zk-node", z.ens, strconv.Itoa(i+1)); err != nil {
						return err
					}
				}
				return nil
			}, fmt.Sprint(ids), nil
		}
	}
	lossy := func(zk bool) func(context.Context, *rand.Rand) (func(context.Context) error, string, error) {
		return func(ctx context.Context, rng *rand.Rand) (func(context.Context) error, string, error) {
			s, err := z.leader(ctx)
			if err != nil {
				return nil, "", err
			}
			ps := []*proxy{s.mesos}
			if zk {
				ps = s.zk
			}
			loss := drawLoss(rng)
			for _, p := range ps {
				p.setLoss(loss)
			}
			return func(context.Context) error {
				for _, p := range ps {
					p.setLoss(0)
				}
				return nil
			}, fmt.Sprintf("%s %.0f%%", s.p.name, 100*loss), nil
		}
	}
	s := z.Session
	return []FaultKind{
		{Name: "kill-leader", MinHold: time.Second, MaxHold: 4 * time.Second, Inject: kill(leader)},
		{Name: "kill-standby", MinHold: time.Second, MaxHold: 4 * time.Second, Inject: kill(z.standby)},
		{Name: "pause-leader", MinHold: s + time.Second, MaxHold: s + 4*time.Second, Inject: pauseLeader(z.leader)},
		{Name: "leader-cut-from-registry", MinHold: s, MaxHold: s + 5*time.Second, Inject: links("registry", true, true, 0)},
		{Name: "leader-cut-from-agents", MinHold: 2 * time.Second, MaxHold: 8 * time.Second, Inject: links("agents", false, true, 0)},
		{Name: "registry-delay-200ms", MinHold: 2 * time.Second, MaxHold: 8 * time.Second, Inject: links("registry", true, false, 200*time.Millisecond)},
		{Name: "leader-registry-loss", MinHold: 2 * time.Second, MaxHold: 10 * time.Second, Inject: lossy(true)},
		{Name: "leader-agents-loss", MinHold: 2 * time.Second, MaxHold: 10 * time.Second, Inject: lossy(false)},
		{Name: "history-db-down", MinHold: 5 * time.Second, MaxHold: 20 * time.Second, Inject: func(ctx context.Context, _ *rand.Rand) (func(context.Context) error, string, error) {
			for _, s := range z.scheds {
				s.db.set(true, 0)
			}
			return func(context.Context) error {
				for _, s := range z.scheds {
					s.db.set(false, 0)
				}
				return nil
			}, "mariadb", nil
		}},
		{Name: "zk-server-killed", MinHold: 2 * time.Second, MaxHold: 8 * time.Second, Inject: zkNodes(1)},
		{Name: "zk-quorum-lost", MinHold: 3 * time.Second, MaxHold: 10 * time.Second, Inject: zkNodes(2)},
		{Name: "agents-killed", MinHold: time.Second, MaxHold: 3 * time.Second, Inject: func(ctx context.Context, _ *rand.Rand) (func(context.Context) error, string, error) {
			z.mesos.kill()
			return func(ctx context.Context) error { return z.mesos.start() }, "mesos-local", nil
		}},
	}
}

func (z *ZK) Heal(ctx context.Context) error {
	for _, s := range z.scheds {
		_ = s.p.signal(syscall.SIGCONT)
		for _, p := range s.proxies() {
			p.set(false, 0)
		}
		if !s.p.running() {
			if err := z.restart(s)(ctx); err != nil {
				return err
			}
		}
	}
	for i := range 3 {
		_ = z.services(ctx, "start-zk-node", z.ens, strconv.Itoa(i+1))
	}
	if !z.mesos.running() {
		return z.mesos.start()
	}
	return nil
}

func (z *ZK) Stop() error {
	for _, s := range z.scheds {
		s.p.stop(10 * time.Second)
		for _, p := range s.proxies() {
			p.close()
		}
	}
	if z.mesos != nil {
		z.mesos.stop(10 * time.Second)
	}
	if z.ens != "" {
		return errors.Join(z.services(context.Background(), "stop-ensemble", z.ens),
			z.services(context.Background(), "stop-mysql", z.ens))
	}
	return nil
}

// readEnv reads `export K=V` / `K=V` lines.
func readEnv(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("soak: %w", err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export ")
		if k, v, ok := strings.Cut(l, "="); ok {
			out[k] = strings.Trim(v, `'"`)
		}
	}
	return out, sc.Err()
}

var client = &http.Client{Timeout: 5 * time.Second}

func getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func waitHTTP(ctx context.Context, url string, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if !sleep(ctx, 200*time.Millisecond) {
			return ctx.Err()
		}
	}
	return fmt.Errorf("soak: %s did not answer 200 within %s", url, bound)
}
