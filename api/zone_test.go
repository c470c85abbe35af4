package api

import (
	"errors"
	"testing"
	"time"
)

// /api/cron/next named the machine's zone "Local" (issue 57 item 13; time.Local
// is "Local" unless TZ was set when it was first read, so this is tested
// with injected sources, not through the endpoint): it
// names it from TZ, /etc/localtime's link or /etc/timezone, else UTC.
func TestZoneName(t *testing.T) {
	none := func(string) (string, error) { return "", errors.New("no") }
	for _, tc := range []struct {
		name     string
		loc      *time.Location
		tz       string
		link     func(string) (string, error)
		file     func(string) (string, error)
		expected string
	}{
		{"a named zone", time.UTC, "", none, none, "UTC"},
		{"TZ", time.Local, "Europe/Berlin", none, none, "Europe/Berlin"},
		{"TZ with a colon", time.Local, ":Asia/Tokyo", none, none, "Asia/Tokyo"},
		{"the link", time.Local, "", func(string) (string, error) { return "/usr/share/zoneinfo/America/New_York", nil }, none, "America/New_York"},
		{"a relative link", time.Local, "", func(string) (string, error) { return "../usr/share/zoneinfo/Etc/UTC", nil }, none, "Etc/UTC"},
		{"/etc/timezone", time.Local, "", none, func(string) (string, error) { return "Asia/Shanghai\n", nil }, "Asia/Shanghai"},
		{"unknown", time.Local, "", none, none, "UTC"},
	} {
		if got := zoneName(tc.loc, func(string) string { return tc.tz }, tc.link, tc.file); got != tc.expected {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.expected)
		}
	}
}
