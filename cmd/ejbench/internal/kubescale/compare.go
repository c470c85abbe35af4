package kubescale

import (
	"fmt"
	"math"
	"strings"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/promtext"
)

// labelOf is a label's value in a series as printed (`name{a="x",b="y"}`), "" if absent.
func labelOf(series, label string) string {
	i := strings.IndexByte(series, '{')
	if i < 0 {
		return ""
	}
	rest := series[i+1:]
	for rest != "" {
		eq := strings.Index(rest, `="`)
		if eq < 0 {
			return ""
		}
		name := rest[:eq]
		v := rest[eq+2:]
		end := strings.IndexByte(v, '"')
		for end > 0 && v[end-1] == '\\' { // an escaped quote inside the value
			next := strings.IndexByte(v[end+1:], '"')
			if next < 0 {
				return ""
			}
			end += next + 1
		}
		if end < 0 {
			return ""
		}
		if name == label {
			return v[:end]
		}
		rest = strings.TrimPrefix(v[end+1:], ",")
	}
	return ""
}

// deltaBy sums the growth of a counter from m0 to m1 by the values of labels (joined by a
// space, empty ones left out).
func deltaBy(m0, m1 promtext.Set, name string, labels ...string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m1 {
		if k != name && !strings.HasPrefix(k, name+"{") {
			continue
		}
		var parts []string
		for _, l := range labels {
			if x := labelOf(k, l); x != "" {
				parts = append(parts, x)
			}
		}
		out[strings.Join(parts, " ")] += v - m0[k]
	}
	return out
}

func delta(m0, m1 promtext.Set, name, label string) map[string]float64 {
	return deltaBy(m0, m1, name, label)
}

// Flow schemas of each side's clients at the API server: our scheduler authenticates as its
// service account (outside kube-system); kube-controller-manager's informers as
// system:kube-controller-manager, its controllers as service accounts of kube-system
// (--use-service-account-credentials); kube-scheduler as system:kube-scheduler. kwok and this
// harness are system:masters (exempt).
var sideFlows = map[string][]string{
	"ours": {"service-accounts"},
	"jobs": {"kube-controller-manager", "kube-system-service-accounts", "kube-scheduler"},
}

// compare puts the two sides side by side against the goals.
func (k *kubeScale) compare() {
	ours, jobs := k.results["ours"], k.results["jobs"]
	r, sc := k.r, "kube-scale"
	if ours != nil {
		p99 := promtext.Percentile(ours.w.toCreated, .99)
		r.Add(sc, "goal: ours, fire → pod created p99", bench.Ms(p99), "≤ 1 s", bench.Le(p99, 1))
		hwm := float64(ours.mem["scheduler"].HWM)
		r.Add(sc, "goal: ours, scheduler memory (peak VmHWM)", bench.MB(hwm), "≤ 1 GB", bench.Le(hwm, 1<<30))
	}
	for _, s := range []*sideResult{ours, jobs} {
		if s == nil {
			continue
		}
		var own float64
		for _, f := range sideFlows[s.name] {
			own += s.flows[f]
		}
		r.Add(sc, s.name+": its clients' API requests: per second / per pod created", fmt.Sprintf("%.1f/s / %.2f (flow schemas %s)",
			own/s.wall, own/math.Max(1, float64(s.w.created)), strings.Join(sideFlows[s.name], ", ")), "", nil)
	}
	if ours == nil || jobs == nil {
		return
	}
	ro, rj := float64(ours.w.created)/ours.wall, float64(jobs.w.created)/jobs.wall
	r.Add(sc, "goal: pods created per second, ours / Indexed Jobs", fmt.Sprintf("%.1f / %.1f = %.2f×", ro, rj, ro/rj), "≥ 2×", bench.Ge(ro/rj, 2))
	co, cj := ours.perPod(ours.own...), jobs.perPod(jobs.own...)
	r.Add(sc, "goal: CPU per pod net of idle, ours / Job controller + kube-scheduler", fmt.Sprintf("%.2f / %.2f ms = %.2f×", co, cj, co/cj), "≤ 0.5×", bench.Le(co/cj, 0.5))
}
