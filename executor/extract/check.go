package extract

import (
	"archive/tar"
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"strings"

	"github.com/ejcloud/elasticjob/app"
)

// ErrUnsafe is wrapped by CheckEntries' error: the archive holds an entry
// Extract refuses, so no run of it could start.
var ErrUnsafe = errors.New("the archive cannot be extracted")

// CheckEntries reads an archive's entry names (and link targets) without
// writing anything and refuses what Extract refuses: an entry with a ..
// component or an absolute path, a link out of the extraction directory,
// a device or FIFO. (Links that escape only together, x -> . with
// y -> x/.., are found by Extract on the tree it wrote.) A package that is no archive (a script, an ELF
// executable, a jar) passes: its format is app.CheckPackage's to judge.
// The scheduler runs it on upload, so a package no run could extract is
// refused there rather than at every run.
func CheckEntries(ctx context.Context, r io.ReaderAt, size int64) error {
	kind, err := detect(r)
	if err != nil || !kind.IsArchive() {
		return nil
	}
	if _, err := exec.LookPath("xz"); kind == app.FormatXz && err != nil {
		return nil // this machine cannot read it; the executors' may
	}
	if kind == app.FormatZip {
		err = checkZip(r, size)
	} else {
		err = checkTar(ctx, kind, io.NewSectionReader(r, 0, size))
	}
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("%w: %w", ErrUnsafe, err)
	}
	return ctx.Err()
}

func checkZip(r io.ReaderAt, size int64) error {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return fmt.Errorf("zip: %w", err)
	}
	for _, f := range zr.File {
		name, err := zipRule(f)
		if err != nil {
			return err
		}
		if name != "" && f.Mode()&fs.ModeSymlink != 0 {
			if err := checkZipLink(f, name); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkZipLink(f *zip.File, name string) error {
	rc, err := f.Open()
	if err != nil {
		return fmt.Errorf("zip %s: %w", f.Name, err)
	}
	defer rc.Close()
	target, err := io.ReadAll(io.LimitReader(rc, 4096))
	if err != nil {
		return fmt.Errorf("zip %s: %w", f.Name, err)
	}
	return checkLink(name, string(target))
}

func checkTar(ctx context.Context, kind app.PackageFormat, src io.Reader) error {
	stream, wait, err := decompress(ctx, kind, src)
	if err != nil {
		return err
	}
	tr := tar.NewReader(stream)
	for first := true; ; first = false {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return wait()
		}
		if err != nil {
			if first {
				return fmt.Errorf("not a tar archive: %w", err)
			}
			return fmt.Errorf("tar: %w", err)
		}
		if _, _, err := tarRule(hdr); err != nil {
			_ = wait()
			return err
		}
	}
}

// tarRule applies Extract's rules to one tar entry, for the upload's check
// and for extraction alike: its cleaned name ("" for the root itself or a
// global header, skipped) and, for a hard link, its cleaned target. An
// absolute or escaping name or link, a device or FIFO is refused.
func tarRule(hdr *tar.Header) (name, link string, err error) {
	if hdr.Typeflag == tar.TypeXGlobalHeader {
		return "", "", nil
	}
	name, err = checkName(hdr.Name)
	if err != nil || name == "" {
		return "", "", err
	}
	switch hdr.Typeflag {
	case tar.TypeDir, tar.TypeReg, tar.TypeRegA: //nolint:staticcheck // TypeRegA still appears in old archives
		return name, "", nil
	case tar.TypeSymlink:
		return name, "", checkLink(name, hdr.Linkname)
	case tar.TypeLink:
		if link, err = checkName(hdr.Linkname); err != nil || link == "" {
			return "", "", fmt.Errorf("hard link %q -> %q points outside the extraction directory", name, hdr.Linkname)
		}
		return name, link, nil
	}
	return "", "", fmt.Errorf("entry %q is a %s; only files, directories and links are allowed", name, typeName(hdr.Typeflag))
}

// zipRule is tarRule for a zip entry: its cleaned name ("" for the root),
// a special file refused. A link's target is read from its content, by
// the caller.
func zipRule(f *zip.File) (string, error) {
	name, err := checkName(strings.ReplaceAll(f.Name, `\`, "/"))
	if err != nil || name == "" {
		return "", err
	}
	if m := f.Mode(); m&(fs.ModeDevice|fs.ModeCharDevice|fs.ModeNamedPipe|fs.ModeSocket|fs.ModeIrregular) != 0 {
		return "", fmt.Errorf("entry %q is a special file (%v); only files, directories and links are allowed", name, m.Type())
	}
	return name, nil
}
