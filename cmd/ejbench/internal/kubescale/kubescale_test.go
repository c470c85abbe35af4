package kubescale

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/promtext"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestKsCron(t *testing.T) {
	for _, c := range []struct {
		offset, period int
		want           string
	}{{7, 60, "7/60 * * * * ?"}, {3, 10, "3/10 * * * * ?"}, {125, 300, "5 2/5 * * * ?"}, {3599, 3600, "59 59/60 * * * ?"}} {
		got, err := ksCron(c.offset, c.period)
		if err != nil || got != c.want {
			t.Errorf("ksCron(%d, %d) = %q, %v; want %q", c.offset, c.period, got, err, c.want)
		}
	}
	for _, p := range []int{0, 7, 90, 420} {
		if _, err := ksCron(0, p); err == nil {
			t.Errorf("period %d accepted", p)
		}
	}
}

func TestKsFireBefore(t *testing.T) {
	at := time.Unix(999_999_900+123, 0) // 999_999_900 % 300 = 0
	if got := ksFireBefore(at, 100, 300); got.Unix() != 999_999_900+100 {
		t.Errorf("offset 100: %d", got.Unix())
	}
	if got := ksFireBefore(at, 123, 300); got.Unix() != 999_999_900+123 {
		t.Errorf("offset 123 (at the fire): %d", got.Unix())
	}
	if got := ksFireBefore(at, 200, 300); got.Unix() != 999_999_900-100 {
		t.Errorf("offset 200 (the period before): %d", got.Unix())
	}
}

func TestKsIndexAndLoad(t *testing.T) {
	if ksIndex(ksName(42)) != 42 || ksIndex("ks-1") != -1 || ksIndex("other") != -1 {
		t.Error("ksIndex")
	}
	if ksShards(0) != 1 || ksShards(9) != 10 || ksExit(19) != 1 || ksExit(18) != 0 || ksParam(1) != "run=3s exit=0" {
		t.Error("the load's shape")
	}
	if r := offeredRate(10, 10); r != 5.5 {
		t.Errorf("offered %v", r)
	}
}

func TestLabelOfAndDelta(t *testing.T) {
	s := `apiserver_request_total{code="201",resource="pods",subresource="",verb="POST"}`
	if labelOf(s, "verb") != "POST" || labelOf(s, "resource") != "pods" || labelOf(s, "group") != "" {
		t.Error("labelOf")
	}
	if labelOf(`m{a="x\"y",b="z"}`, "b") != "z" {
		t.Error("labelOf past an escaped quote")
	}
	m0 := promtext.Set{s: 10}
	m1 := promtext.Set{s: 25, `apiserver_request_total{resource="pods",verb="DELETE"}`: 4, `other{verb="POST"}`: 9}
	d := deltaBy(m0, m1, "apiserver_request_total", "verb", "resource")
	if d["POST pods"] != 15 || d["DELETE pods"] != 4 || len(d) != 2 {
		t.Errorf("deltaBy %v", d)
	}
}

// A window's figures: the pods of its fires, those never seen counted as +Inf.
func TestPodRecorderStats(t *testing.T) {
	base := time.Unix(1_000_000_020, 0) // % 10 = 0
	now := base
	r := newPodRecorder("ns", 10)
	r.now = func() time.Time { return now }
	pod := func(name, job, phase string) any {
		return podObj(name, job, phase)
	}
	// jobs 0..19 with period 10: second s fires jobs s%10 and s%10+10, 1+i%10 shards each.
	now = base.Add(200 * time.Millisecond)
	r.observe(pod("a", ksName(0), "Pending")) // job 0 fired at base (offset 0)
	now = base.Add(700 * time.Millisecond)
	r.observe(pod("a", ksName(0), "Running"))
	r.observe(pod("b", ksName(10), "Succeeded")) // ran and ended unseen
	w := r.stats(base, base.Add(time.Second), 20)
	if w.expected != 2 || w.fired != 2 || w.created != 2 || w.ended != 1 {
		t.Fatalf("stats %+v", w)
	}
	if math.Abs(promtext.Percentile(w.toCreated, 0)-0.2) > 1e-9 || math.Abs(promtext.Percentile(w.toRunning, 0)-0.7) > 1e-9 {
		t.Errorf("latencies %v %v", w.toCreated, w.toRunning)
	}
	w = r.stats(base, base.Add(2*time.Second), 20) // job 1 and 11 (2 + 2 shards) never seen
	if w.expected != 6 || w.fired != 2 || !math.IsInf(promtext.Percentile(w.toCreated, .99), 1) {
		t.Errorf("unseen pods: %+v", w)
	}
	path := filepath.Join(t.TempDir(), "pods.csv")
	if err := r.dump(path, base, base.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	fire := base.UTC().Format("15:04:05")
	if want := "job,fire,created_ms,running_ms\n0," + fire + ",200,700\n10," + fire + ",700,700\n"; string(b) != want {
		t.Errorf("dump:\n%s\nwant:\n%s", b, want)
	}
}

func podObj(name, job, phase string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"elasticjob.io/job": job}},
		Status: corev1.PodStatus{Phase: corev1.PodPhase(phase)}}
}
