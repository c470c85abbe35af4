package ejctl

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/app"
)

// packEpoch is the modification time of every packed entry, so the same
// tree always packs to the same bytes (1980-01-01, the zip epoch: tools
// that dislike time 0 accept it).
var packEpoch = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// packEntry is one file, directory or symbolic link of a tree.
type packEntry struct {
	rel  string // slash-separated, relative to the root
	abs  string
	mode fs.FileMode
	link string
}

// Pack writes dir as a reproducible tar.gz: entries sorted by path, every
// mtime packEpoch, uid/gid 0 without names, modes 0755 for directories and
// executables and 0644 for other files, symbolic links kept as links, and
// a gzip header without name or time. The same tree gives the same sha256
// whoever packs it, wherever, whenever. Paths matching an exclude pattern
// (path.Match on the relative path or on the base name) are left out, with
// everything under them. Other file types (sockets, devices) are refused.
func Pack(dir string, w io.Writer, exclude []string) error {
	entries, err := walkTree(dir, exclude)
	if err != nil {
		return err
	}
	gz, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	gz.Header.ModTime, gz.Header.Name, gz.Header.OS = time.Time{}, "", 255
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		if err := writeEntry(tw, e); err != nil {
			return fmt.Errorf("pack %s: %w", e.rel, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("pack: %w", err)
	}
	if err := gz.Close(); err != nil {
		return fmt.Errorf("pack: %w", err)
	}
	return nil
}

func walkTree(dir string, exclude []string) ([]packEntry, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", dir, err)
	}
	var out []packEntry
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if excluded(rel, exclude) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := packEntry{rel: rel, abs: p, mode: info.Mode()}
		switch {
		case info.Mode().IsDir(), info.Mode().IsRegular():
		case info.Mode()&fs.ModeSymlink != 0:
			if e.link, err = os.Readlink(p); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s is a %v, not a file, directory or link", rel, info.Mode().Type())
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", dir, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out, nil
}

func excluded(rel string, patterns []string) bool {
	for _, pat := range patterns {
		pat = strings.TrimSuffix(pat, "/")
		if ok, _ := path.Match(pat, rel); ok {
			return true
		}
		if ok, _ := path.Match(pat, path.Base(rel)); ok {
			return true
		}
	}
	return false
}

func writeEntry(tw *tar.Writer, e packEntry) error {
	h := &tar.Header{Name: e.rel, ModTime: packEpoch, Format: tar.FormatPAX}
	switch {
	case e.mode.IsDir():
		h.Typeflag, h.Name, h.Mode = tar.TypeDir, e.rel+"/", 0o755
	case e.link != "":
		h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, e.link, 0o777
	default:
		h.Typeflag, h.Mode = tar.TypeReg, 0o644
		if e.mode&0o111 != 0 {
			h.Mode = 0o755
		}
	}
	if h.Typeflag != tar.TypeReg {
		return tw.WriteHeader(h)
	}
	f, err := os.Open(e.abs)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	h.Size = info.Size()
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	n, err := io.Copy(tw, f)
	if err == nil && n != h.Size {
		err = fmt.Errorf("the file changed size while it was packed")
	}
	return err
}

// packedFile is a package ready to upload: a temporary file (removed by
// cleanup) or the user's own file, with its digest.
type packedFile struct {
	path    string
	name    string // file name sent to the scheduler
	size    int64
	sha256  string
	cleanup func()
}

// preparePackage packs a directory into a temporary file, or takes a file
// as it is, and digests it.
func preparePackage(src, appName string, exclude []string) (packedFile, error) {
	info, err := os.Stat(src)
	if err != nil {
		return packedFile{}, fmt.Errorf("package %s: %w", src, err)
	}
	pf := packedFile{path: src, name: filepath.Base(src), cleanup: func() {}}
	if info.IsDir() {
		tmp, err := os.CreateTemp("", "ejctl-"+appName+"-*.tar.gz")
		if err != nil {
			return pf, fmt.Errorf("package %s: %w", src, err)
		}
		pf.path, pf.name = tmp.Name(), appName+".tar.gz"
		pf.cleanup = func() { os.Remove(tmp.Name()) }
		err = Pack(src, tmp, exclude)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			pf.cleanup()
			return pf, err
		}
	} else if !info.Mode().IsRegular() {
		return pf, fmt.Errorf("package %s: not a directory or a regular file", src)
	} else if err := checkFormat(src); err != nil {
		return pf, err
	}
	pf.sha256, pf.size, err = digestFile(pf.path)
	if err != nil {
		pf.cleanup()
	}
	return pf, err
}

// checkFormat refuses, before anything changes on the scheduler, a file
// the upload would refuse: neither an archive nor a single program.
func checkFormat(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("package %s: %w", p, err)
	}
	defer f.Close()
	head := make([]byte, app.SniffBytes)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("package %s: %w", p, err)
	}
	if _, err := app.CheckPackage(head[:n]); err != nil {
		return fmt.Errorf("package %s: %w", p, err)
	}
	return nil
}

func digestFile(p string) (string, int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("digest %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
