package namespace

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestKeySplitRoundTrip(t *testing.T) {
	for _, c := range []struct{ ns, name, key string }{
		{"default", "nightly", "nightly"},
		{"", "nightly", "nightly"},
		{"pay", "nightly", "pay~nightly"},
		{"pay", "-", "pay~-"},
		{"a-b", "x.y_z", "a-b~x.y_z"},
	} {
		if got := Key(c.ns, c.name); got != c.key {
			t.Errorf("Key(%q, %q) = %q, want %q", c.ns, c.name, got, c.key)
		}
		ns, name := Split(c.key)
		want := c.ns
		if want == "" {
			want = Default
		}
		if ns != want || name != c.name {
			t.Errorf("Split(%q) = %q, %q", c.key, ns, name)
		}
		if local, ok := Local(c.key, c.ns); !ok || local != c.name {
			t.Errorf("Local(%q, %q) = %q, %v", c.key, c.ns, local, ok)
		}
	}
	if _, ok := Local("pay~nightly", "default"); ok {
		t.Error("a key of pay is local to default")
	}
	if _, ok := Local("nightly", "pay"); ok {
		t.Error("a key of default is local to pay")
	}
}

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"default", "pay", "a", "team-1", "0", "a23456789012345678901234567890123456789012345678901234567890123"} {
		if err := ValidateName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Pay", "-a", "a-", "a_b", "a.b", "a~b", "a/b", "a234567890123456789012345678901234567890123456789012345678901234"} {
		if err := ValidateName(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestRecordValidate(t *testing.T) {
	ok := Record{Name: "pay", Guarantee: &Resources{1, 1024}, Limit: &Resources{4, 4096}, Weight: 2}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	if (Record{Name: "pay"}).Validate() != nil {
		t.Fatal("every field is optional")
	}
	for name, r := range map[string]Record{
		"guarantee above limit": {Name: "pay", Guarantee: &Resources{5, 1}, Limit: &Resources{4, 4096}},
		"memory above limit":    {Name: "pay", Guarantee: &Resources{1, 8192}, Limit: &Resources{4, 4096}},
		"negative cpu":          {Name: "pay", Limit: &Resources{-1, 1}},
		"NaN memory":            {Name: "pay", Guarantee: &Resources{1, math.NaN()}},
		"negative weight":       {Name: "pay", Weight: -1},
		"huge weight":           {Name: "pay", Weight: MaxWeight + 1},
		"1e20 CPUs":             {Name: "pay", Limit: &Resources{1e20, 1}},
		"memory past 1 PiB":     {Name: "pay", Guarantee: &Resources{1, MaxMemoryMB + 1}},
		"bad name":              {Name: "Pay"},
	} {
		if err := r.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: accepted", name)
		}
	}
	if (Record{}).EffectiveWeight() != 1 || ok.EffectiveWeight() != 2 {
		t.Error("effective weight")
	}
}

func TestHostCapsValidateAndDefault(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	for _, bad := range []HostCaps{{PidsMax: n(-1)}, {PidsMax: n(MaxPidsCap + 1)}, {MemoryMB: n(-5)}, {DiskMB: n(MaxDiskMB + 1)}} {
		if err := (Record{Name: "pay", Caps: &bad}).Validate(); err == nil || !strings.Contains(err.Error(), "caps.") {
			t.Errorf("caps %+v: %v", bad, err)
		}
	}
	ok := HostCaps{PidsMax: n(0), MemoryMB: n(1024)}
	if err := (Record{Name: "pay", Caps: &ok}).Validate(); err != nil {
		t.Fatal(err)
	}
	if p, m, d := ok.Or(8192, 4096, 100); p != 0 || m != 1024 || d != 100 {
		t.Errorf("Or: %d %d %d", p, m, d)
	}
	var none *HostCaps
	if p, m, d := none.Or(8192, 4096, 100); p != 8192 || m != 4096 || d != 100 {
		t.Errorf("nil Or: %d %d %d", p, m, d)
	}
}
