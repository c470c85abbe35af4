package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// client talks to one scheduler's REST API over keep-alive connections.
type client struct {
	base string
	hc   *http.Client
}

func newClient(base string, conns int) *client {
	tr := &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: time.Minute, DisableCompression: true}
	return &client{base: base, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

func (c *client) close() { c.hc.CloseIdleConnections() }

// do sends one request and returns the status and body (read to the end
// so the connection is reused).
func (c *client) do(method, path, contentType string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func (c *client) postJSON(path, body string) error {
	code, b, err := c.do(http.MethodPost, path, "application/json", []byte(body))
	if err != nil {
		return err
	}
	if code/100 != 2 {
		return fmt.Errorf("POST %s: %d %s", path, code, strings.TrimSpace(string(b)))
	}
	return nil
}

func (c *client) trigger(job string) error { return c.postJSON("/api/job/trigger", job) }

func (c *client) healthy() bool {
	code, _, err := c.do(http.MethodGet, "/healthz", "", nil)
	return err == nil && code == http.StatusOK
}

// scrape reads /metrics into series → value.
func (c *client) scrape() (metricSet, error) {
	m, _, _, err := c.scrapeAt()
	return m, err
}

// scrapeAt is scrape, also returning when the values were read: the
// middle of the time between sending the request and the response's
// headers (the handler gathers every value before it writes a byte), and
// half that time as the reading's uncertainty. Under load a scrape of a
// large registry takes seconds; taking the time after the body arrived
// instead shifts a reading by its scrape's duration, and a 30 s rate
// between a slow and a fast scrape by several percent.
func (c *client) scrapeAt() (metricSet, time.Time, time.Duration, error) {
	req, err := http.NewRequest(http.MethodGet, c.base+"/metrics", nil)
	if err != nil {
		return nil, time.Time{}, 0, err
	}
	sent := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, time.Time{}, 0, err
	}
	half := time.Since(sent) / 2
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, time.Time{}, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, time.Time{}, 0, fmt.Errorf("GET /metrics: %d", resp.StatusCode)
	}
	return parseMetrics(b), sent.Add(half), half, nil
}

// metricSet maps a series as printed (`name{labels}`) to its value.
type metricSet map[string]float64

func parseMetrics(b []byte) metricSet {
	m := metricSet{}
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

// sum adds every series of a metric whose labels contain all of want
// (each `k="v"`).
func (m metricSet) sum(name string, want ...string) float64 {
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

// histogram is a Prometheus histogram's cumulative buckets.
type histogram struct {
	le    []float64 // upper bounds, ascending, +Inf last
	cum   []float64
	count float64
	sum   float64
}

// histogram reads a histogram; labels (`k="v"`, as printed, before le)
// select one series of a labelled histogram.
func (m metricSet) histogram(name string, labels ...string) histogram {
	var h histogram
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
		h.le = append(h.le, x.le)
		h.cum = append(h.cum, x.n)
	}
	h.count = m[count]
	h.sum = m[sum]
	return h
}

// minus is the histogram of the observations made between two scrapes.
func (h histogram) minus(old histogram) histogram {
	d := histogram{le: h.le, cum: make([]float64, len(h.cum)), count: h.count - old.count, sum: h.sum - old.sum}
	for i := range h.cum {
		d.cum[i] = h.cum[i]
		if i < len(old.cum) {
			d.cum[i] -= old.cum[i]
		}
	}
	return d
}

// quantile interpolates linearly within the bucket holding rank q·count
// (as PromQL's histogram_quantile does) and also returns that bucket's
// upper bound. NaN when empty.
func (h histogram) quantile(q float64) (est, upper float64) {
	if h.count <= 0 || len(h.le) == 0 {
		return math.NaN(), math.NaN()
	}
	rank := q * h.count
	for i, c := range h.cum {
		if c >= rank && c > 0 {
			lo, prev := 0.0, 0.0
			if i > 0 {
				lo, prev = h.le[i-1], h.cum[i-1]
			}
			if math.IsInf(h.le[i], 1) {
				return lo, h.le[i]
			}
			if c == prev {
				return h.le[i], h.le[i]
			}
			return lo + (h.le[i]-lo)*(rank-prev)/(c-prev), h.le[i]
		}
	}
	return h.le[len(h.le)-1], h.le[len(h.le)-1]
}

// maxBound is the upper bound of the highest non-empty bucket (the
// histogram cannot tell the exact maximum) and the lower bound of that
// bucket.
func (h histogram) maxBound() (lower, upper float64) {
	if h.count <= 0 {
		return math.NaN(), math.NaN()
	}
	for i := len(h.cum) - 1; i >= 0; i-- {
		prev := 0.0
		if i > 0 {
			prev = h.cum[i-1]
		}
		if h.cum[i] > prev {
			lo := 0.0
			if i > 0 {
				lo = h.le[i-1]
			}
			return lo, h.le[i]
		}
	}
	return math.NaN(), math.NaN()
}

// percentile of exact samples (nearest rank).
func percentile(xs []float64, q float64) float64 {
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

func maxOf(xs []float64) float64 {
	m := math.NaN()
	for _, x := range xs {
		if math.IsNaN(m) || x > m {
			m = x
		}
	}
	return m
}
