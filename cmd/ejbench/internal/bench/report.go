package bench

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// Secs formats d in seconds, two decimals.
func Secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// Logf logs a line to stderr, stamped with the time of day.
func Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// FirstLine is s up to its first newline.
func FirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Report collects the figures and prints them as one table.
type Report struct {
	header []string
	rows   []row
	notes  []string
	Extra  []string // verbatim blocks (Go benchmark output)
}

type row struct{ scenario, figure, value, target, verdict string }

// Machine adds the machine (CPUs, model, Go) and the start to the header.
func (r *Report) Machine() {
	model := "unknown"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				if i := strings.IndexByte(l, ':'); i >= 0 {
					model = strings.TrimSpace(l[i+1:])
				}
				break
			}
		}
	}
	r.header = append(r.header,
		fmt.Sprintf("machine: %d CPUs (%s), %s, %s/%s", runtime.NumCPU(), model, runtime.Version(), runtime.GOOS, runtime.GOARCH),
		"started: "+time.Now().UTC().Format(time.RFC3339)+", load average at start: "+Loadavg())
}

// Loadavg is /proc/loadavg's 1, 5 and 15 minute figures: other work on a
// shared machine shows up in every latency figure.
func Loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// Add records a figure; verdict is "met", "MISSED" or "" when there is no
// target (informational).
func (r *Report) Add(scenario, figure, value, target string, met *bool) {
	v := ""
	if met != nil {
		v = "met"
		if !*met {
			v = "MISSED"
		}
	}
	r.rows = append(r.rows, row{scenario, figure, value, target, v})
	Logf("  %-12s %-52s %s  %s %s", scenario, figure, value, target, v)
}

// Note adds a line under the table.
func (r *Report) Note(s string) { r.notes = append(r.notes, s) }

// Print writes the header, the table, the verbatim blocks and the notes.
func (r *Report) Print(w *os.File, took time.Duration) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, "ElasticJob-Cloud benchmark figures")
	for _, h := range r.header {
		fmt.Fprintln(w, h)
	}
	fmt.Fprintf(w, "harness run time: %s, load average at end: %s\n\n", took.Round(time.Second), Loadavg())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "| scenario\t| figure\t| measured\t| target\t| \t|")
	fmt.Fprintln(tw, "|---\t|---\t|---\t|---\t|---\t|")
	for _, x := range r.rows {
		fmt.Fprintf(tw, "| %s\t| %s\t| %s\t| %s\t| %s\t|\n", x.scenario, x.figure, x.value, x.target, x.verdict)
	}
	tw.Flush()
	for _, e := range r.Extra {
		fmt.Fprintln(w)
		fmt.Fprint(w, e)
	}
	if len(r.notes) > 0 {
		fmt.Fprintln(w, "\nnotes:")
		for _, n := range r.notes {
			fmt.Fprintln(w, "- "+n)
		}
	}
}

// Le is whether v is at most target (a verdict for Add; NaN is not).
func Le(v, target float64) *bool { b := !math.IsNaN(v) && v <= target; return &b }

// Ge is whether v is at least target (a verdict for Add; NaN is not).
func Ge(v, target float64) *bool { b := !math.IsNaN(v) && v >= target; return &b }

// Ms formats seconds as milliseconds (ns below a microsecond, n/a for NaN).
func Ms(sec float64) string {
	if math.IsNaN(sec) {
		return "n/a"
	}
	if math.IsInf(sec, 1) {
		return "+Inf"
	}
	v := sec * 1000
	switch {
	case v < 0:
		return fmt.Sprintf("%.2f ms", v)
	case v < 0.001:
		return fmt.Sprintf("%.0f ns", v*1e6)
	case v < 1:
		return fmt.Sprintf("%.3f ms", v)
	case v < 100:
		return fmt.Sprintf("%.2f ms", v)
	default:
		return fmt.Sprintf("%.0f ms", v)
	}
}

// MB formats bytes as MiB.
func MB(b float64) string { return fmt.Sprintf("%.1f MB", b/(1<<20)) }
