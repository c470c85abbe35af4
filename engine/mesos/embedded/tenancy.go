package embedded

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	mesos "github.com/mesos/mesos-go/api/v1/lib"

	"github.com/ejcloud/elasticjob/cgroups"
	"github.com/ejcloud/elasticjob/engine/mesos/embedded/tenant"
)

// Tenancy confines each tenant's executors (package tenant): they run as
// an OS user of the tenant's own, in PID and mount namespaces of their
// own where the work directory and Hide are invisible but for the
// executor's sandbox and its tenant's cache. The agent must run as root
// on Linux (Start fails otherwise).
type Tenancy struct {
	// Init is a binary that calls tenant.Init first thing (the
	// executor's); required.
	Init string
	// UIDs are given to tenants, one each (tenant.DefaultRange when zero),
	// recorded in the work directory's tenants.json.
	UIDs tenant.Range
	// Of names an executor's tenant; nil: its framework's id.
	Of func(frameworkID string, info mesos.ExecutorInfo) string
	// Hide are paths executors must not see besides the work directory
	// (the scheduler's data directory, key files, configuration).
	Hide []string
	// ReadOnly are directories shown read-only whatever hides them (/tmp
	// is private to each executor): the executor's own.
	ReadOnly []string
	// CacheDir, when set, gives each tenant's executors a cache of their
	// own, CacheDir/tenant-<tenant> (ELASTICJOB_CACHE_DIR), owned by the
	// tenant: no tenant reads or fills another's.
	CacheDir string
	// RangeLockDir holds this host's schedulers' claims on their uid
	// ranges (tenant.LockRange; default tenant.DefaultLockDir): Start
	// fails when UIDs overlaps another running scheduler's.
	RangeLockDir string
	// AllowUserNamespaces lets executors and their tasks make user
	// namespaces; by default a seccomp filter refuses them (tenant.Plan).
	AllowUserNamespaces bool
}

// tenancy is the agent's Tenancy at work; nil when off.
type tenancy struct {
	cfg     Tenancy
	hide    []string
	book    *tenant.Book
	release func() // the claim on the uid range
}

// close gives the uid range up (nil t: nothing).
func (t *tenancy) close() {
	if t != nil && t.release != nil {
		t.release()
	}
}

// CheckTenancy says why cfg.Tenancy cannot confine executors here (nil:
// it can): the agent must run as root on Linux, and a tenant's user must
// reach the Init binary and, above what is hidden, its sandbox and cache
// (a checkout under /root, mode 0700, is out of its reach).
func CheckTenancy(cfg Config) error {
	t := cfg.Tenancy
	if t == nil {
		return nil
	}
	if err := tenant.Probe(); err != nil {
		return err
	}
	if !filepath.IsAbs(t.Init) {
		return fmt.Errorf("%w: Tenancy.Init %q must be an absolute path", ErrConfig, t.Init)
	}
	work, err := filepath.Abs(cfg.WorkDir)
	if err != nil {
		return err
	}
	// /tmp (tenant.Private) is each executor's own: below it the path is
	// made anew.
	hide := append(append([]string{work}, tenant.Private...), t.Hide...)
	if err := reachable(t.Init, hide, true); err != nil {
		return fmt.Errorf("the executor %s: %w", t.Init, err)
	}
	if err := reachable(work, hide, false); err != nil {
		return fmt.Errorf("the sandboxes under %s: %w", work, err)
	}
	if t.CacheDir != "" {
		if err := reachable(t.CacheDir, hide, false); err != nil {
			return fmt.Errorf("the app cache %s: %w", t.CacheDir, err)
		}
	}
	return nil
}

// reachable says why a user that is neither owner nor group member cannot
// reach p: a directory above it (above the first hidden one, whose
// tmpfs takes its place) it may not search, or, for a program, p itself
// it may not run.
func reachable(p string, hidden []string, program bool) error {
	dir := filepath.Dir(p)
	for {
		if slices.ContainsFunc(hidden, func(h string) bool { return dir == h || strings.HasPrefix(dir, h+"/") }) {
			// hidden, or below what is: the tmpfs's (mode 0755) inside
		} else if st, err := os.Stat(dir); err == nil && st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("%s (mode %o) is closed to other users", dir, st.Mode().Perm())
		}
		if dir == "/" || dir == "." {
			break
		}
		dir = filepath.Dir(dir)
	}
	if program {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o005 != 0o005 {
			return fmt.Errorf("mode %o: other users cannot run it", st.Mode().Perm())
		}
	}
	return nil
}

// startTenancy checks that tenants can be isolated here and opens the
// uid book; nil without Config.Tenancy.
func startTenancy(cfg Config) (*tenancy, error) {
	t := cfg.Tenancy
	if t == nil {
		return nil, nil
	}
	if err := CheckTenancy(cfg); err != nil {
		return nil, fmt.Errorf("local: tenant isolation: %w", err)
	}
	r := t.UIDs
	if r == (tenant.Range{}) {
		r = tenant.DefaultRange
	}
	lockDir := t.RangeLockDir
	if lockDir == "" {
		lockDir = tenant.DefaultLockDir
	}
	work, err := filepath.Abs(cfg.WorkDir)
	if err != nil {
		return nil, err
	}
	release, err := tenant.LockRange(lockDir, r, work)
	if err != nil {
		return nil, fmt.Errorf("local: tenant isolation: %w", err)
	}
	book, err := tenant.OpenBook(filepath.Join(cfg.WorkDir, "tenants.json"), r)
	if err != nil {
		release()
		return nil, err
	}
	hide := []string{cfg.WorkDir}
	for _, h := range t.Hide {
		if abs, err := filepath.Abs(h); err == nil && h != "" {
			hide = append(hide, abs)
		}
	}
	tc := *t
	if tc.CacheDir != "" {
		if tc.CacheDir, err = filepath.Abs(tc.CacheDir); err == nil {
			err = os.MkdirAll(tc.CacheDir, 0o700)
		}
		if err != nil {
			release()
			return nil, fmt.Errorf("local: tenant caches: %w", err)
		}
		hide = append(hide, tc.CacheDir)
	}
	return &tenancy{cfg: tc, hide: hide, book: book, release: release}, nil
}

// tenantOf is e's tenant.
func (t *tenancy) tenantOf(e *executor) string {
	if t.cfg.Of != nil {
		return t.cfg.Of(e.fw.id, e.info)
	}
	return e.fw.id
}

// assign gives e its tenant's uid (once): the agent chowns its tasks'
// groups' tasks files to it before the executor starts. Nil t: nothing.
func (t *tenancy) assign(e *executor) error {
	if t == nil || e.uid > 0 {
		return nil
	}
	name := t.tenantOf(e)
	uid, err := t.book.UID(name)
	if err != nil {
		return err
	}
	e.uid, e.nsGroup = uid, nsPrefix+safeName(name)
	return nil
}

// confine makes cmd start e as its tenant: the sandbox (and the files the
// agent fetched into it) becomes the tenant's with mode 0700, so does its
// cache and the container cgroup (the executor makes its tasks' groups
// there), and cmd runs tenant.Init with the plan. It returns the
// variables to add to cmd's environment.
func (t *tenancy) confine(e *executor, cmd *exec.Cmd) ([]string, error) {
	name := t.tenantOf(e)
	if err := t.assign(e); err != nil {
		return nil, err
	}
	uid := e.uid
	if err := chownTree(e.dir, uid); err != nil {
		return nil, err
	}
	if err := os.Chmod(e.dir, 0o700); err != nil {
		return nil, err
	}
	show := []string{e.dir}
	// The executor refuses tasks unless it finds itself unprivileged
	// (executor.ConfinedEnv).
	env := []string{"HOME=" + e.dir, "ELASTICJOB_TENANT_CONFINED=1"}
	if t.cfg.CacheDir != "" {
		cache := tenantCache(t.cfg.CacheDir, safeName(name))
		if err := os.MkdirAll(cache, 0o700); err != nil {
			return nil, err
		}
		if err := os.Chown(cache, uid, uid); err != nil {
			return nil, err
		}
		show = append(show, cache)
		env = append(env, "ELASTICJOB_CACHE_DIR="+cache)
	}
	if e.cgroup != nil {
		// Only the files that move a process in: the groups' directories
		// and limits stay root's (taskgroups.go). In v2 a move needs the
		// common ancestor's cgroup.procs too: the container's.
		var err error
		if e.cgroup.Hierarchy().Mode() == cgroups.V2 {
			err = e.cgroup.ChownFiles(uid, uid, "cgroup.procs")
		}
		if err == nil {
			err = e.cgroup.Child("executor").ChownFiles(uid, uid, "tasks", "cgroup.procs")
		}
		if err != nil {
			return nil, err
		}
	}
	path, err := filepath.Abs(cmd.Path)
	if err != nil {
		return nil, err
	}
	plan := tenant.Plan{UID: uid, GID: uid, Hide: t.hide, Show: show, ReadOnly: t.cfg.ReadOnly, Dir: e.dir,
		Argv: append([]string{path}, cmd.Args[1:]...), AllowUserNS: t.cfg.AllowUserNamespaces}
	if err := plan.Validate(); err != nil {
		return nil, err
	}
	cmd.Path, cmd.Args = t.cfg.Init, []string{t.cfg.Init}
	return append(env, tenant.EnvPlan+"="+plan.Encode()), nil
}

// chownTree gives uid (and the gid of the same number) dir and
// everything in it, links themselves rather than their targets.
func chownTree(dir string, uid int) error {
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
}

// safeName keeps [A-Za-z0-9._-] of a tenant's name, the rest as _XX.
func safeName(s string) string {
	var out []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '.' && i > 0:
			out = append(out, c)
		default:
			out = append(out, '_')
			out = strconv.AppendUint(out, uint64(c), 16)
		}
	}
	return string(out)
}

// tenantCache is the app cache of the tenant whose safe name is safe.
func tenantCache(root, safe string) string { return filepath.Join(root, "tenant-"+safe) }
