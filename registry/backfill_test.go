package registry

import (
	"testing"
	"time"
)

func TestBackfillRunKeyNamesItsInstant(t *testing.T) {
	at := time.Date(2026, 3, 2, 9, 10, 0, 0, time.UTC)
	for _, ns := range []string{"default", "pay"} {
		key := BackfillRunKey(ns, "bf-20260303T090000-0001", at)
		got, ok := BackfillInstant(key)
		if !ok || !got.Equal(at) {
			t.Fatalf("BackfillInstant(%q) = %v %v", key, got, ok)
		}
		if !IsBackfillRunKey(key) {
			t.Fatalf("IsBackfillRunKey(%q) false", key)
		}
	}
	for _, k := range []string{"", "mykey", "bf-x", "bf-x.notanumber", "other.1700000000"} {
		if _, ok := BackfillInstant(k); ok {
			t.Errorf("BackfillInstant(%q) ok", k)
		}
	}
}
