package packages

import "testing"

// TestLaunchURL: a hosted package is resolved to this instance, then moved to the address
// the tasks reach; other URLs pass; no reach (Mesos) leaves the resolved URL.
func TestLaunchURL(t *testing.T) {
	l := NewLinks([]byte("k"), "http://sched:8899")
	sha := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	other := NewLinks([]byte("k"), "http://peer:8899").URL(sha, "a.zip")
	for _, c := range []struct {
		name, advertised, reach, in, want string
	}{
		{"pods reach another address", "http://sched:8899", "http://ej.svc:8899", other, "http://ej.svc:8899" + l.Path(sha, "a.zip")},
		{"under the advertised address", "http://sched:8899", "http://ej.svc:8899", "http://sched:8899/api/x", "http://ej.svc:8899/api/x"},
		{"elsewhere", "http://sched:8899", "http://ej.svc:8899", "https://repo/a.tgz", "https://repo/a.tgz"},
		{"mesos: no reach", "http://sched:8899", "", other, l.URL(sha, "a.zip")},
		{"same address", "http://sched:8899", "http://sched:8899/", other, l.URL(sha, "a.zip")},
		{"empty", "http://sched:8899", "http://ej.svc:8899", "", ""},
	} {
		if got := LaunchURL(l.Resolve, c.advertised, c.reach)(c.in); got != c.want {
			t.Errorf("%s: %q → %q, want %q", c.name, c.in, got, c.want)
		}
	}
	if got := LaunchURL(nil, "http://a", "http://b")("http://a/p"); got != "http://b/p" {
		t.Errorf("without resolve: %q", got)
	}
}
