package app

import (
	"bytes"
	"errors"
	"fmt"
)

// PackageFormat is what an app package holds, told by its first bytes
// (SniffPackage), never by its file name.
type PackageFormat int

// The package forms the executor runs: an archive it extracts, or a single
// program it makes executable and runs.
const (
	FormatUnknown PackageFormat = iota // none of the below: refused
	FormatTar
	FormatGzip  // a gzip-compressed tar (tar.gz, tgz)
	FormatBzip2 // a bzip2-compressed tar
	FormatXz    // an xz-compressed tar
	FormatZip
	FormatScript // a single file starting with #! (an interpreter line)
	FormatELF    // a single Linux executable
	FormatJar    // a Java archive (a zip whose first entry is META-INF/…): run on a JVM, not extracted
)

// IsArchive reports whether f is extracted (rather than run as one file).
func (f PackageFormat) IsArchive() bool { return f >= FormatTar && f <= FormatZip }

func (f PackageFormat) String() string {
	names := [...]string{"unknown", "tar", "tar.gz", "tar.bz2", "tar.xz", "zip", "script", "ELF executable", "jar"}
	if f < 0 || int(f) >= len(names) {
		return "unknown"
	}
	return names[f]
}

// SniffBytes is how many leading bytes SniffPackage needs (a tar header's
// "ustar" magic ends at byte 262).
const SniffBytes = 512

// ErrNotPackage is wrapped by CheckPackage's error: the package is neither
// an archive nor a single program.
var ErrNotPackage = errors.New("not a tar, tar.gz or zip archive")

var (
	magicGzip   = []byte{0x1f, 0x8b}
	magicBzip2  = []byte("BZh")
	magicXz     = []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}
	magicZip    = []byte("PK\x03\x04")
	magicZip0   = []byte("PK\x05\x06") // an empty zip
	magicScript = []byte("#!")
	magicELF    = []byte("\x7fELF")
)

// SniffPackage tells a package's format from its first bytes (up to
// SniffBytes; fewer when the package is shorter).
func SniffPackage(head []byte) PackageFormat {
	switch {
	case bytes.HasPrefix(head, magicGzip):
		return FormatGzip
	case bytes.HasPrefix(head, magicBzip2):
		return FormatBzip2
	case bytes.HasPrefix(head, magicXz):
		return FormatXz
	case bytes.HasPrefix(head, magicZip) && isJar(head):
		return FormatJar
	case bytes.HasPrefix(head, magicZip), bytes.HasPrefix(head, magicZip0):
		return FormatZip
	case len(head) >= 262 && string(head[257:262]) == "ustar": // POSIX and GNU tar headers
		return FormatTar
	case bytes.HasPrefix(head, magicScript):
		return FormatScript
	case bytes.HasPrefix(head, magicELF):
		return FormatELF
	}
	return FormatUnknown
}

// isJar reports whether a zip's first entry (its local header's name, at
// byte 30) is under META-INF/, as jar, Maven and Gradle write jars.
func isJar(head []byte) bool {
	if len(head) < 30 {
		return false
	}
	n := int(head[26]) | int(head[27])<<8
	name := head[30:min(len(head), 30+n)]
	return bytes.HasPrefix(name, []byte("META-INF/"))
}

// CheckPackage returns the format of a package whose first bytes are head,
// or an error wrapping ErrNotPackage that says what it begins with: random
// bytes, a text file without a #! line or an empty file would otherwise be
// run by /bin/sh and fail with a shell syntax error.
func CheckPackage(head []byte) (PackageFormat, error) {
	f := SniffPackage(head)
	if f != FormatUnknown {
		return f, nil
	}
	if len(head) == 0 {
		return f, fmt.Errorf("the package is empty: it is %w, nor a script", ErrNotPackage)
	}
	return f, fmt.Errorf("the package is %w (nor tar.bz2 or tar.xz), nor a single script starting with #! or an ELF executable: it begins with %q",
		ErrNotPackage, head[:min(len(head), 16)])
}
