package extract

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/executor/internal/bytesize"
	"github.com/ejcloud/elasticjob/executor/internal/lockfile"
)

// Defaults for zero Limits fields.
const (
	DefaultMaxBytes   = 4 << 30
	DefaultMaxEntries = 100_000
)

// Limits bound what one archive may expand to.
type Limits struct {
	MaxBytes   int64 // bytes written (DefaultMaxBytes)
	MaxEntries int   // entries of any kind (DefaultMaxEntries)
}

// Package is the input: an open package file and what is known about it.
type Package struct {
	File   *os.File
	Size   int64
	SHA256 string // hex; names the extraction directory
	Name   string // base name of the URL: the file name of a non-archive
}

// Result says where the app was unpacked.
type Result struct {
	Dir    string // the extraction root
	Single string // for a non-archive, the name of the file in Dir
	Reused bool   // extracted earlier
}

// Extract unpacks pkg into parent/<sha prefix>/ unless that already exists.
func Extract(ctx context.Context, pkg Package, parent string, lim Limits) (Result, error) {
	if len(pkg.SHA256) < 16 {
		return Result{}, fmt.Errorf("extract %s: bad checksum %q", pkg.Name, pkg.SHA256)
	}
	key := pkg.SHA256[:16]
	res := Result{Dir: filepath.Join(parent, key)}
	kind, err := detect(pkg.File)
	if err != nil {
		return res, fmt.Errorf("extract %s: %w", pkg.Name, err)
	}
	if !kind.IsArchive() {
		res.Single = fileName(pkg.Name)
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return res, err
	}
	lock, err := lockfile.Acquire(ctx, filepath.Join(parent, "."+key+".lock"))
	if err != nil {
		return res, err
	}
	defer lock.Unlock()
	if _, err := os.Stat(res.Dir); err == nil {
		res.Reused = true
		return res, nil
	}
	tmp, err := os.MkdirTemp(parent, ".tmp-"+key+"-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(tmp) // gone after the rename; cleans up a failure
	if err := unpack(ctx, kind, pkg, tmp, res.Single, lim); err != nil {
		return res, fmt.Errorf("extract %s: %w", pkg.Name, err)
	}
	return res, os.Rename(tmp, res.Dir)
}

func unpack(ctx context.Context, kind app.PackageFormat, pkg Package, dir, single string, lim Limits) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	w := &writer{root: root, left: or(lim.MaxBytes, DefaultMaxBytes), entries: or(lim.MaxEntries, DefaultMaxEntries)}
	w.limit, w.max = w.left, w.entries
	src := io.NewSectionReader(pkg.File, 0, pkg.Size)
	switch kind {
	case app.FormatScript, app.FormatELF:
		return w.file(single, 0o755, src)
	case app.FormatJar:
		return w.file(single, 0o644, src)
	case app.FormatZip:
		err = w.zip(src, pkg.Size)
	default:
		r, wait, derr := decompress(ctx, kind, src)
		if derr != nil {
			return derr
		}
		err = w.tar(r)
		if werr := wait(); err == nil {
			err = werr
		}
	}
	if err != nil {
		return err
	}
	return w.checkLinks()
}

// fileName is the name given to a non-archive package.
func fileName(urlBase string) string {
	b := path.Base(urlBase)
	if b == "" || b == "." || b == ".." || b == "/" {
		return "app"
	}
	return b
}

// checkName validates an entry name and returns it cleaned; "" means the
// entry is the root itself and is skipped.
func checkName(name string) (string, error) {
	if path.IsAbs(name) {
		return "", fmt.Errorf("entry %q has an absolute path", name)
	}
	for _, part := range splitPath(name) {
		if part == ".." {
			return "", fmt.Errorf("entry %q escapes the extraction directory", name)
		}
	}
	c := path.Clean(name)
	if c == "." {
		return "", nil
	}
	return c, nil
}

// checkLink validates the target of a symlink at name.
func checkLink(name, target string) error {
	if target == "" || path.IsAbs(target) {
		return fmt.Errorf("symlink %q -> %q points outside the extraction directory", name, target)
	}
	if c := path.Join(path.Dir(name), target); c == ".." || len(c) > 2 && c[:3] == "../" {
		return fmt.Errorf("symlink %q -> %q points outside the extraction directory", name, target)
	}
	return nil
}

func splitPath(p string) []string {
	var parts []string
	for p != "" {
		i := 0
		for i < len(p) && p[i] != '/' {
			i++
		}
		parts = append(parts, p[:i])
		if i == len(p) {
			break
		}
		p = p[i+1:]
	}
	return parts
}

var errTooBig = errors.New("too big")

func sizeError(limit int64) error {
	return fmt.Errorf("archive expands to more than %s", bytesize.Format(limit))
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
