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

	"github.com/ejcloud/elasticjob/app"
)

// detect reads the magic bytes at the start of r: an archive, a single
// program (a #! script or an ELF executable), or an error wrapping
// app.ErrNotPackage for anything else.
func detect(r io.ReaderAt) (app.PackageFormat, error) {
	head := make([]byte, app.SniffBytes)
	n, err := r.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	return app.CheckPackage(head[:n])
}

// decompress returns the tar stream inside a (possibly compressed) package
// and a wait func to call when done reading.
func decompress(ctx context.Context, k app.PackageFormat, src io.Reader) (io.Reader, func() error, error) {
	nop := func() error { return nil }
	switch k {
	case app.FormatTar:
		return src, nop, nil
	case app.FormatGzip:
		z, err := gzip.NewReader(src)
		if err != nil {
			return nil, nil, fmt.Errorf("gzip: %w", err)
		}
		return z, nop, nil
	case app.FormatBzip2:
		return bzip2.NewReader(src), nop, nil
	case app.FormatXz:
		return unxz(ctx, src)
	}
	return nil, nil, fmt.Errorf("unknown format %v", k)
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
