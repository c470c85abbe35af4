package upload

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
)

// pkgScript records the wall clock (ns) at process start into the file
// named by the job parameter.
const pkgScript = "#!/bin/sh\ndate +%s%N >> \"$ELASTICJOB_JOB_PARAMETER\"\n"

// Run measures publishing a large app through the scheduler: PUT
// /api/app/{app}/package of a package of -package-mb MB (incompressible
// payload in a tar.gz with bin/start.sh), then a trigger, until the job's
// process starts (the executor downloads it from the scheduler over
// loopback, verifies and caches it, extracts it). Also: a second trigger
// (cached package) and a re-upload of the same bytes.
func Run(ctx context.Context, env bench.Env, opt Options, r *bench.Report) error {
	return run(ctx, options{env, opt}, r)
}

func run(ctx context.Context, o options, r *bench.Report) error {
	dir, cleanup, err := bench.TempDir(o.Env, "package")
	if err != nil {
		return err
	}
	defer cleanup()
	pkg := filepath.Join(dir, "app.tar.gz")
	sum, size, err := writeBigPackage(pkg, int64(o.packageMB)<<20)
	if err != nil {
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
	starts := filepath.Join(dir, "starts")
	if err := p.API.PostJSON("/api/app", `{"appName":"big_app","appURL":"http://127.0.0.1:1/placeholder.tgz","bootstrapScript":"bin/start.sh","cpuCount":0.1,"memoryMB":64}`); err != nil {
		return err
	}
	job := fmt.Sprintf(`{"jobName":"big_job","appName":"big_app","jobExecutionType":"TRANSIENT","shardingTotalCount":1,"cpuCount":0.01,"memoryMB":8,"jobParameter":%q}`, starts)
	if err := p.API.PostJSON("/api/job/register", job); err != nil {
		return err
	}
	bench.Logf("package: uploading %s (sha256 %s…)", bench.MB(float64(size)), sum[:12])
	t0 := time.Now()
	if err := uploadFile(ctx, p.API.Base, pkg, sum); err != nil {
		return err
	}
	up := time.Since(t0)
	first, err := triggerUntilStart(ctx, p.API, starts, 0)
	if err != nil {
		return err
	}
	firstRun := time.Duration(first - t0.UnixNano())
	t1 := time.Now()
	second, err := triggerUntilStart(ctx, p.API, starts, 1)
	if err != nil {
		return err
	}
	t2 := time.Now()
	if err := uploadFile(ctx, p.API.Base, pkg, sum); err != nil {
		return err
	}
	reup := time.Since(t2)
	sc := "package"
	r.Add(sc, "package size", bench.MB(float64(size))+" (tar.gz, incompressible payload)", "", nil)
	r.Add(sc, "upload (PUT, sha256 verified, fsync)", fmt.Sprintf("%s (%.0f MB/s)", bench.Ms(up.Seconds()), float64(size)/(1<<20)/up.Seconds()), "", nil)
	r.Add(sc, "upload start → first process start", bench.Ms(firstRun.Seconds()), "", nil)
	r.Add(sc, "  of which trigger → process start (download, extract)", bench.Ms(float64(first-t0.UnixNano()-up.Nanoseconds())/1e9), "", nil)
	r.Add(sc, "second trigger → process start (cached package)", bench.Ms(float64(second-t1.UnixNano())/1e9), "", nil)
	r.Add(sc, "re-upload of the same bytes", bench.Ms(reup.Seconds()), "", nil)
	return nil
}

// writeBigPackage writes a tar.gz holding bin/start.sh and n random bytes.
func writeBigPackage(path string, n int64) (string, int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	gz, _ := gzip.NewWriterLevel(io.MultiWriter(f, h), gzip.NoCompression) // random data does not compress
	tw := tar.NewWriter(gz)
	for _, e := range []struct {
		name string
		size int64
		mode int64
	}{{"bin/start.sh", int64(len(pkgScript)), 0o755}, {"data/payload.bin", n, 0o644}} {
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Size: e.size, Mode: e.mode, Typeflag: tar.TypeReg}); err != nil {
			return "", 0, err
		}
		var src io.Reader = io.LimitReader(rand.Reader, e.size)
		if e.name == "bin/start.sh" {
			src = strings.NewReader(pkgScript)
		}
		if _, err := io.Copy(tw, src); err != nil {
			return "", 0, err
		}
	}
	if err := tw.Close(); err != nil {
		return "", 0, err
	}
	if err := gz.Close(); err != nil {
		return "", 0, err
	}
	st, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), st.Size(), nil
}

// uploadFile streams path to PUT /api/app/big_app/package with its sha256.
func uploadFile(ctx context.Context, base, path, sum string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, base+"/api/app/big_app/package?filename=app.tar.gz", f)
	if err != nil {
		return err
	}
	req.ContentLength = st.Size()
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("X-Content-SHA256", sum)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var ans struct {
		SHA256 string `json:"sha256"`
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &ans) != nil || ans.SHA256 != sum {
		return fmt.Errorf("upload: %d %s", resp.StatusCode, b)
	}
	return nil
}

// triggerUntilStart triggers big_job and returns the (n+1)-th recorded start.
func triggerUntilStart(ctx context.Context, c *bench.Client, starts string, n int) (int64, error) {
	if err := c.Trigger("big_job"); err != nil {
		return 0, err
	}
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
		if ts := bench.ReadStarts(starts); len(ts) > n {
			return ts[n], nil
		}
		if err := bench.SleepCtx(ctx, time.Millisecond); err != nil {
			return 0, err
		}
	}
	return 0, fmt.Errorf("run %d of big_job never started", n+1)
}

// options is what this family's scenarios read: the settings every
// scenario shares and the family's own.
type options struct {
	bench.Env
	Options
}
