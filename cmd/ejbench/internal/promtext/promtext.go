// Package promtext reads what a scheduler's /metrics serves (the
// Prometheus text format) into series the harness sums and into
// histograms it takes quantiles of, and has the percentiles of samples.
package promtext

import (
	"bufio"
	"bytes"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Set maps a series as printed (`name{labels}`) to its value.
type Set map[string]float64

// Parse reads the text format's samples; comments and lines it cannot read are skipped.
func Parse(b []byte) Set {
	m := Set{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		m[line[:i]] = v
	}
	return m
}

// Sum adds every series of a metric whose labels contain all of want
// (each `k="v"`).
func (m Set) Sum(name string, want ...string) float64 {
	var t float64
	for k, v := range m {
		if k != name && !strings.HasPrefix(k, name+"{") {
			continue
		}
		ok := true
		for _, w := range want {
			if !strings.Contains(k, w) {
				ok = false
				break
			}
		}
		if ok {
			t += v
		}
	}
	return t
}

// Histogram is a Prometheus histogram's cumulative buckets.
type Histogram struct {
	Le    []float64 // upper bounds, ascending, +Inf last
	Cum   []float64 // observations at or under each bound
	Count float64   // observations
	Sum   float64   // their sum
}

// Histogram reads a histogram; labels (`k="v"`, as printed, before le)
// select one series of a labelled histogram.
func (m Set) Histogram(name string, labels ...string) Histogram {
	var h Histogram
	type b struct{ le, n float64 }
	var bs []b
	sel := strings.Join(labels, ",")
	prefix, count, sum := name+"_bucket{le=\"", name+"_count", name+"_sum"
	if sel != "" {
		prefix, count, sum = name+"_bucket{"+sel+",le=\"", count+"{"+sel+"}", sum+"{"+sel+"}"
	}
	for k, v := range m {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		s := strings.TrimSuffix(strings.TrimPrefix(k, prefix), "\"}")
		le, err := strconv.ParseFloat(s, 64) // "+Inf" parses as +Inf
		if err != nil {
			continue
		}
		bs = append(bs, b{le, v})
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].le < bs[j].le })
	for _, x := range bs {
		h.Le = append(h.Le, x.le)
		h.Cum = append(h.Cum, x.n)
	}
	h.Count = m[count]
	h.Sum = m[sum]
	return h
}

// Minus is the histogram of the observations made between two scrapes.
func (h Histogram) Minus(old Histogram) Histogram {
	d := Histogram{Le: h.Le, Cum: make([]float64, len(h.Cum)), Count: h.Count - old.Count, Sum: h.Sum - old.Sum}
	for i := range h.Cum {
		d.Cum[i] = h.Cum[i]
		if i < len(old.Cum) {
			d.Cum[i] -= old.Cum[i]
		}
	}
	return d
}

// Quantile interpolates linearly within the bucket holding rank q·count
// (as PromQL's histogram_quantile does) and also returns that bucket's
// upper bound. NaN when empty.
func (h Histogram) Quantile(q float64) (est, upper float64) {
	if h.Count <= 0 || len(h.Le) == 0 {
		return math.NaN(), math.NaN()
	}
	rank := q * h.Count
	for i, c := range h.Cum {
		if c >= rank && c > 0 {
			lo, prev := 0.0, 0.0
			if i > 0 {
				lo, prev = h.Le[i-1], h.Cum[i-1]
			}
			if math.IsInf(h.Le[i], 1) {
				return lo, h.Le[i]
			}
			if c == prev {
				return h.Le[i], h.Le[i]
			}
			return lo + (h.Le[i]-lo)*(rank-prev)/(c-prev), h.Le[i]
		}
	}
	return h.Le[len(h.Le)-1], h.Le[len(h.Le)-1]
}

// MaxBound is the upper bound of the highest non-empty bucket (the
// histogram cannot tell the exact maximum) and the lower bound of that
// bucket.
func (h Histogram) MaxBound() (lower, upper float64) {
	if h.Count <= 0 {
		return math.NaN(), math.NaN()
	}
	for i := len(h.Cum) - 1; i >= 0; i-- {
		prev := 0.0
		if i > 0 {
			prev = h.Cum[i-1]
		}
		if h.Cum[i] > prev {
			lo := 0.0
			if i > 0 {
				lo = h.Le[i-1]
			}
			return lo, h.Le[i]
		}
	}
	return math.NaN(), math.NaN()
}

// Percentile of exact samples (nearest rank).
func Percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(s) {
		i = len(s) - 1
	}
	return s[i]
}

// Max is the largest sample, NaN when none.
func Max(xs []float64) float64 {
	m := math.NaN()
	for _, x := range xs {
		if math.IsNaN(m) || x > m {
			m = x
		}
	}
	return m
}
