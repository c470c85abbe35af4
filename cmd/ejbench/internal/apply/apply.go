package apply

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
)

// applyJobs is how many job files the apply scenario writes.
const applyJobs = 1000

// Run measures "ejctl apply -f DIR" of 1,000 job files (one YAML file
// each, plus the app's) against the embedded scheduler: the first apply
// (1,000 registrations), a second one (nothing changes: one list call and
// the diff), and a third after one field of every job changed (1,000
// updates), each as the wall time of the real bin/ejctl process.
func Run(ctx context.Context, env bench.Env, r *bench.Report) error {
	return run(ctx, options{env}, r)
}

func run(ctx context.Context, o options, r *bench.Report) error {
	dir, cleanup, err := bench.TempDir(o.Env, "apply")
	if err != nil {
		return err
	}
	defer cleanup()
	files := filepath.Join(dir, "files")
	if err := writeApplyFiles(files, "v1"); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "sched"), 0o750); err != nil {
		return err
	}
	p, err := bench.StartScheduler(o.BinDir, filepath.Join(dir, "sched"))
	if err != nil {
		return err
	}
	defer func() { p.Stop() }()
	if _, err := p.WaitHealthy(30 * time.Second); err != nil {
		return err
	}
	sc := "apply"
	for _, step := range []struct{ what, desc, want string }{
		{"first apply: 1,000 jobs + 1 app created", "", "1001 created"},
		{"second apply: nothing changes", "", "1001 unchanged"},
		{"third apply: 1,000 jobs updated", "v2", "1000 updated"},
	} {
		if step.desc != "" {
			if err := writeApplyFiles(files, step.desc); err != nil {
				return err
			}
		}
		took, out, err := ejctlApply(ctx, o.BinDir, p.API.Base, files)
		if err != nil {
			return err
		}
		if !strings.Contains(out, step.want) {
			return fmt.Errorf("apply: want %q in the summary, got %s", step.want, lastLine(out))
		}
		r.Add(sc, step.what, bench.Ms(took.Seconds())+fmt.Sprintf(" (%.0f jobs/s)", applyJobs/took.Seconds()), "", nil)
	}
	r.Note("apply: bin/ejctl apply -f DIR (1,000 one-job YAML files), default --parallel 8, embedded scheduler with registry_sync=full")
	return nil
}

func writeApplyFiles(dir, desc string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	app := "kind: App\nappName: bench_app\nappURL: http://127.0.0.1:1/app.tar.gz\nbootstrapScript: bin/start.sh\ncpuCount: 0.1\nmemoryMB: 32\n"
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(app), 0o644); err != nil {
		return err
	}
	for i := range applyJobs {
		job := fmt.Sprintf("kind: Job\njobName: bench_job_%04d\nappName: bench_app\ncron: \"0 0 3 * * ?\"\nshardingTotalCount: 2\ncpuCount: 0.1\nmemoryMB: 16\ndescription: %s\n", i, desc)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("job_%04d.yaml", i)), []byte(job), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func ejctlApply(ctx context.Context, binDir, base, files string) (time.Duration, string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "ejctl"), "--addr", base, "apply", "-f", files)
	cmd.Env = append(os.Environ(), "EJCTL_CONFIG="+filepath.Join(files, "..", "ejctl.json"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t := time.Now()
	err := cmd.Run()
	took := time.Since(t)
	if err != nil {
		return took, out.String(), fmt.Errorf("ejctl apply: %w: %s", err, lastLine(out.String()))
	}
	return took, out.String(), nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// options is what this family's scenarios read: the settings every
// scenario shares and the family's own.
type options struct {
	bench.Env
}
