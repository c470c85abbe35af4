package sandboxgc

import (
	"testing"
	"time"
)

func TestMaxAge(t *testing.T) {
	week := 7 * 24 * time.Hour
	for _, c := range []struct {
		headroom, usage float64
		want            time.Duration
	}{{0.1, 0, week * 9 / 10}, {0.1, 0.5, week * 4 / 10}, {0.1, 0.9, 0}, {0.1, 0.99, 0}, {0.5, 0.2, week * 3 / 10}} {
		if got := MaxAge(week, c.headroom, c.usage); got.Round(time.Second) != c.want.Round(time.Second) {
			t.Errorf("MaxAge(week, %v, %v) = %v, want %v", c.headroom, c.usage, got, c.want)
		}
	}
	if u, err := DiskUsage(t.TempDir()); err != nil || u <= 0 || u > 1 {
		t.Errorf("DiskUsage = %v, %v", u, err)
	}
	if _, err := DiskUsage("/nonexistent/dir"); err == nil {
		t.Error("DiskUsage of a missing path")
	}
}
