package tenant

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBookGivesStableDistinctUIDs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tenants.json")
	r := Range{Lo: 5000, Hi: 5002}
	b, err := OpenBook(path, r)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"pay": 5000, "search": 5001, "default": 5002}
	for _, tn := range []string{"pay", "search", "pay", "default"} {
		u, err := b.UID(tn)
		if err != nil || u != want[tn] {
			t.Fatalf("UID(%s) = %d, %v; want %d", tn, u, err, want[tn])
		}
	}
	if _, err := b.UID("full"); err == nil || !strings.Contains(err.Error(), "taken") {
		t.Fatalf("a full range: %v", err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("book file: %v %v", st, err)
	}
	// Reopened (a restart): the same uids; with a range that moved, an
	// entry outside it is given out again from the new range.
	b2, err := OpenBook(path, Range{Lo: 5001, Hi: 5010})
	if err != nil {
		t.Fatal(err)
	}
	if u, _ := b2.UID("search"); u != 5001 {
		t.Fatalf("search after restart: %d", u)
	}
	if u, _ := b2.UID("pay"); u != 5003 {
		t.Fatalf("pay outside the new range: got %d, want 5003", u)
	}
}

func TestParseRange(t *testing.T) {
	for s, ok := range map[string]bool{"100000-165535": true, " 2000 - 2000 ": true, "0-10": false, "5-3": false,
		"10000": false, "a-b": false, "1000-4294967295": false} {
		_, err := ParseRange(s)
		if (err == nil) != ok {
			t.Errorf("ParseRange(%q): %v", s, err)
		}
	}
}

func TestPlan(t *testing.T) {
	p := Plan{UID: 5000, GID: 5000, Hide: []string{"/data/mesos", "/data", "/etc/key", "/data/x/y"},
		Show: []string{"/data/mesos/s/1"}, Dir: "/data/mesos/s/1", Argv: []string{"/bin/executor", "-x"}}
	got, err := Decode(p.Encode())
	if err != nil || got.Argv[1] != "-x" {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	if h := hideOrder(p.Hide); strings.Join(h, ",") != "/data,/etc/key" {
		t.Fatalf("hideOrder: %v", h)
	}
	for _, bad := range []Plan{
		{UID: 0, GID: 5, Dir: "/x", Argv: []string{"/e"}},
		{UID: 5, GID: 5, Dir: "/x", Argv: []string{"e"}},
		{UID: 5, GID: 5, Dir: "/x/../y", Argv: []string{"/e"}},
		{UID: 5, GID: 5, Dir: "/x", Hide: []string{"/"}, Argv: []string{"/e"}},
	} {
		if bad.Validate() == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
}
