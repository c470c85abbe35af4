package extract

import (
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
)

type kind int

const (
	kindFile kind = iota
	kindTar
	kindGzip
	kindBzip2
	kindXz
	kindZip
)

var (
	magicGzip  = []byte{0x1f, 0x8b}
	magicBzip2 = []byte("BZh")
	magicXz    = []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}
	magicZip   = []byte("PK\x03\x04")
	magicZip0  = []byte("PK\x05\x06") // empty zip
)

// detect reads the magic bytes at the start of r.
func detect(r io.ReaderAt) (kind, error) {
	head := make([]byte, 512)
	n, err := r.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, magicGzip):
		return kindGzip, nil
	case bytes.HasPrefix(head, magicBzip2):
		return kindBzip2, nil
	case bytes.HasPrefix(head, magicXz):
		return kindXz, nil
	case bytes.HasPrefix(head, magicZip), bytes.HasPrefix(head, magicZip0):
		return kindZip, nil
	case isTar(head):
		return kindTar, nil
	}
	return kindFile, nil
}

// isTar checks the "ustar" magic of POSIX and GNU headers.
func isTar(head []byte) bool {
	return len(head) >= 262 && string(head[257:262]) == "ustar"
}

// decompress returns the tar stream inside a (possibly compressed) package
// and a wait func to call when done reading.
func decompress(ctx context.Context, k kind, src io.Reader) (io.Reader, func() error, error) {
	nop := func() error { return nil }
	switch k {
	case kindTar:
		return src, nop, nil
	case kindGzip:
		z, err := gzip.NewReader(src)
		if err != nil {
			return nil, nil, fmt.Errorf("gzip: %w", err)
		}
		return z, nop, nil
	case kindBzip2:
		return bzip2.NewReader(src), nop, nil
	case kindXz:
		return unxz(ctx, src)
	}
	return nil, nil, fmt.Errorf("unknown format %d", k)
}

// unxz runs `xz -dc`. wait kills xz if the tar reader stopped early.
func unxz(ctx context.Context, src io.Reader) (io.Reader, func() error, error) {
	if _, err := exec.LookPath("xz"); err != nil {
		return nil, nil, errors.New("a tar.xz package needs the xz command (Debian package xz-utils)")
	}
	ctx, cancel := context.WithCancel(ctx)
	cmd := exec.CommandContext(ctx, "xz", "-dc")
	cmd.Stdin = src
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("xz: %w", err)
	}
	wait := func() error {
		defer cancel()
		// Drain trailing padding; if much more is left (the tar reader
		// stopped early), kill xz rather than decompress it all.
		n, _ := io.CopyN(io.Discard, out, 1<<20)
		killed := n == 1<<20
		if killed {
			cancel()
		}
		if err := cmd.Wait(); err != nil && !killed && ctx.Err() == nil {
			return fmt.Errorf("xz: %v: %s", err, bytes.TrimSpace(stderr.Bytes()))
		}
		return nil
	}
	return out, wait, nil
}
