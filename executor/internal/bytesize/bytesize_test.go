package bytesize

import "testing"

func TestFormatParse(t *testing.T) {
	for n, want := range map[int64]string{1 << 30: "1 GiB", 4 << 30: "4 GiB", 1536 << 10: "1536 KiB", 1000: "1000 bytes", 0: "0 bytes"} {
		if got := Format(n); got != want {
			t.Errorf("Format(%d) = %q, want %q", n, got, want)
		}
	}
	for s, want := range map[string]int64{"1GiB": 1 << 30, "1 GiB": 1 << 30, "512MiB": 512 << 20, "2g": 2 << 30, "100MB": 100e6, "4096": 4096, "10B": 10} {
		got, err := Parse(s)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "x", "-1", "1.5GiB", "GiB"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) succeeded", s)
		}
	}
}
