package ejctl

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
)

func (c appGroup) appCmd() *cobra.Command {
	cmd := group("app", "Apps: list, show, publish, delete, disable, enable")
	cmd.AddCommand(objectGroup{c.cli}.objectCmds(appKind)...)
	cmd.AddCommand(c.publishCmd())
	return cmd
}

// publishOpts are the flags of app publish.
type publishOpts struct {
	name, bootstrap string
	cpu, mem        float64
	cache           bool
	sampling        int
	exclude         []string
}

func (c appGroup) publishCmd() *cobra.Command {
	var o publishOpts
	cmd := &cobra.Command{
		Use:   "publish DIR|FILE --name APP [--bootstrap SCRIPT]",
		Short: "Pack a directory (or take a package file), upload it and create or update the app",
		Long: "Publish packs DIR reproducibly (sorted entries, fixed times, owners and modes, gzip without a time\n" +
			"stamp: the same tree always gives the same sha256), or takes FILE as it is, creates the app when it\n" +
			"does not exist (or updates the settings given as flags), then uploads the package to the scheduler\n" +
			"(PUT /api/app/APP/package, checksum verified), which points the app's appURL at it.",
		Example: "  ejctl app publish ./my-app --name my_app --bootstrap bin/start.sh --cpu 0.5 --mem 256\n" +
			"  ejctl app publish build/my-app.tar.gz --name my_app",
		Args: exactArgs("DIR|FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.publish(cmd, args[0], o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.name, "name", "", "app name (required)")
	f.StringVar(&o.bootstrap, "bootstrap", "", "bootstrap script inside the package, e.g. bin/start.sh (required for a new app)")
	f.Float64Var(&o.cpu, "cpu", 1, "the executor's CPUs")
	f.Float64Var(&o.mem, "mem", 128, "the executor's memory in MB")
	f.BoolVar(&o.cache, "cache", true, "appCacheEnable: agents reuse a cached download")
	f.IntVar(&o.sampling, "sampling", 0, "eventTraceSamplingCount (0: trace every daemon run)")
	f.StringArrayVar(&o.exclude, "exclude", nil, "leave out paths matching this pattern when packing a directory (repeatable), e.g. .git")
	_ = cmd.MarkFlagRequired("name")
	return cmd
}

func (c appGroup) publish(cmd *cobra.Command, src string, o publishOpts) error {
	ctx := cmd.Context()
	pf, err := preparePackage(src, o.name, o.exclude)
	if err != nil {
		return err
	}
	defer pf.cleanup()
	created, err := c.ensureApp(ctx, cmd, o)
	if err != nil {
		return err
	}
	ans, err := c.upload(ctx, o.name, pf)
	if err != nil {
		if created {
			return fmt.Errorf("app %s was created, but its package was not uploaded: %w; run the publish again", o.name, err)
		}
		return err
	}
	if c.json() {
		return c.printJSON(map[string]any{"appName": ans.AppName, "sha256": ans.SHA256, "size": ans.Size, "appURL": ans.AppURL, "created": created})
	}
	verb := "updated"
	if created {
		verb = "created"
	}
	c.say("app %s %s: package %s (%s, sha256 %s)\nappURL %s", o.name, verb, pf.name, humanBytes(ans.Size), ans.SHA256, ans.AppURL)
	return nil
}

// ensureApp creates the app when it does not exist, or updates the
// settings given as flags when it does.
func (c appGroup) ensureApp(ctx context.Context, cmd *cobra.Command, o publishOpts) (bool, error) {
	var cur map[string]any
	err := c.client.get(ctx, "/api/app/"+seg(o.name), nil, &cur)
	if IsNotFound(err) {
		if o.bootstrap == "" {
			return false, usagef("app %s does not exist yet: --bootstrap is required to create it", o.name)
		}
		body := map[string]any{"appName": o.name, "bootstrapScript": o.bootstrap, "cpuCount": o.cpu, "memoryMB": o.mem,
			"appCacheEnable": o.cache, "eventTraceSamplingCount": o.sampling}
		return true, c.client.sendJSON(ctx, http.MethodPost, "/api/app", body, nil)
	}
	if err != nil {
		return false, err
	}
	changes := map[string]any{}
	set := func(flag, field string, v any) {
		if cmd.Flags().Changed(flag) && cur[field] != v {
			changes[field] = v
		}
	}
	set("bootstrap", "bootstrapScript", o.bootstrap)
	set("cpu", "cpuCount", o.cpu)
	set("mem", "memoryMB", o.mem)
	set("cache", "appCacheEnable", o.cache)
	set("sampling", "eventTraceSamplingCount", float64(o.sampling))
	if len(changes) == 0 {
		return false, nil
	}
	changes["appName"] = o.name
	return false, c.client.sendJSON(ctx, http.MethodPut, "/api/app", changes, nil)
}

// packageAnswer is the answer of PUT /api/app/{appName}/package.
type packageAnswer struct {
	AppName string `json:"appName"`
	SHA256  string `json:"sha256"`
	Size    int64  `json:"size"`
	AppURL  string `json:"appURL"`
}

// progressMin is the size from which an upload draws a progress bar (on a
// terminal).
const progressMin = 1 << 20

func (c appGroup) upload(ctx context.Context, appName string, pf packedFile) (packageAnswer, error) {
	var ans packageAnswer
	f, err := os.Open(pf.path)
	if err != nil {
		return ans, fmt.Errorf("upload: %w", err)
	}
	defer f.Close()
	var body io.Reader = f
	if c.stderrTTY() && pf.size >= progressMin {
		bar := newProgress(c.env.Stderr, pf.name, pf.size)
		defer bar.finish()
		body = bar.reader(f)
	}
	hdr := http.Header{"X-Content-Sha256": {pf.sha256}}
	r := request{method: http.MethodPut, path: "/api/app/" + seg(appName) + "/package", query: url.Values{"filename": {pf.name}},
		body: body, length: pf.size, contentType: "application/octet-stream", header: hdr, noTimeout: true}
	err = c.client.call(ctx, r, &ans)
	return ans, err
}

// progress draws "name  45%  12.3 MB / 27.0 MB  3.2 MB/s" on one line.
type progress struct {
	w     io.Writer
	name  string
	total int64
	done  atomic.Int64
	start time.Time
	stop  chan struct{}
	ended chan struct{}
}

func newProgress(w io.Writer, name string, total int64) *progress {
	p := &progress{w: w, name: name, total: total, start: time.Now(), stop: make(chan struct{}), ended: make(chan struct{})}
	go p.run()
	return p
}

func (p *progress) reader(r io.Reader) io.Reader { return &countingReader{r, &p.done} }

func (p *progress) run() {
	defer close(p.ended)
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			p.draw()
			fmt.Fprintln(p.w)
			return
		case <-t.C:
			p.draw()
		}
	}
}

func (p *progress) draw() {
	done := p.done.Load()
	pct := float64(done) * 100 / float64(max(p.total, 1))
	rate := float64(done) / max(time.Since(p.start).Seconds(), 0.001)
	fmt.Fprintf(p.w, "\r  uploading %s %3.0f%%  %s / %s  %s/s   ", p.name, pct, humanBytes(done), humanBytes(p.total), humanBytes(int64(rate)))
}

func (p *progress) finish() {
	close(p.stop)
	<-p.ended
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
