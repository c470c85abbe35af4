package app

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// zipHead is the start of a zip whose first entry is name.
func zipHead(name string) []byte {
	h := make([]byte, 30, 30+len(name))
	copy(h, "PK\x03\x04")
	h[26], h[27] = byte(len(name)), byte(len(name)>>8)
	return append(h, name...)
}

func TestSniffPackage(t *testing.T) {
	tarHead := make([]byte, 512)
	copy(tarHead, "bin/start.sh")
	copy(tarHead[257:], "ustar\x0000")
	cases := []struct {
		head []byte
		want PackageFormat
	}{
		{[]byte{0x1f, 0x8b, 8, 0}, FormatGzip},
		{[]byte("BZh91AY&SY"), FormatBzip2},
		{[]byte{0xfd, '7', 'z', 'X', 'Z', 0x00, 0}, FormatXz},
		{[]byte("PK\x03\x04rest"), FormatZip},
		{[]byte("PK\x05\x06"), FormatZip},
		{zipHead("META-INF/MANIFEST.MF"), FormatJar},
		{zipHead("META-INF/"), FormatJar},
		{zipHead("bin/start.sh"), FormatZip},
		{tarHead, FormatTar},
		{[]byte("#!/bin/sh\necho hi\n"), FormatScript},
		{[]byte("\x7fELF\x02\x01\x01"), FormatELF},
		{[]byte("echo hi\n"), FormatUnknown}, // a text file without a #! line
		{[]byte(" #!/bin/sh\n"), FormatUnknown},
		{nil, FormatUnknown},
	}
	for _, c := range cases {
		if got := SniffPackage(c.head); got != c.want {
			t.Errorf("SniffPackage(%q) = %v, want %v", c.head, got, c.want)
		}
		if got := c.want.IsArchive(); got != (c.want >= FormatTar && c.want <= FormatZip) {
			t.Errorf("%v.IsArchive() = %v", c.want, got)
		}
	}
}

// TestCheckPackageRefusesWhatIsNeitherArchiveNorProgram: the trial's
// packages (2 KB of random bytes named .tgz, a text file) were run by
// /bin/sh ("Syntax error: EOF in backquote substitution"); they are refused
// with a cause naming the problem.
func TestCheckPackageRefusesWhatIsNeitherArchiveNorProgram(t *testing.T) {
	random := make([]byte, 2048)
	rand.NewChaCha8([32]byte{1}).Read(random) // 2 KB of (fixed) random bytes
	// Not a magic by chance; a backquote, as in the trial.
	random[0], random[1] = 'x', '`'
	for name, head := range map[string][]byte{
		"random bytes": random,
		"a text file":  []byte("hello, this is a README\n"),
		"empty":        nil,
	} {
		f, err := CheckPackage(head[:min(len(head), SniffBytes)])
		if f != FormatUnknown || !errors.Is(err, ErrNotPackage) || !strings.Contains(err.Error(), "not a tar, tar.gz or zip archive") {
			t.Errorf("%s: %v, %v", name, f, err)
		}
	}
	if _, err := CheckPackage([]byte("hello")); !strings.Contains(err.Error(), `it begins with "hello"`) {
		t.Errorf("the error does not show the first bytes: %v", err)
	}
	if f, err := CheckPackage([]byte("#!/usr/bin/env python3\n")); err != nil || f != FormatScript {
		t.Errorf("a script: %v %v", f, err)
	}
}
