package extract

import (
	"archive/tar"
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
)

// writer creates entries under root while counting entries and bytes.
type writer struct {
	root    *os.Root
	limit   int64 // MaxBytes, for messages
	left    int64 // bytes that may still be written
	entries int   // entries that may still be created
	max     int   // MaxEntries, for messages
}

func (w *writer) entry() error {
	if w.entries--; w.entries < 0 {
		return fmt.Errorf("archive has more than %d entries", w.max)
	}
	return nil
}

func (w *writer) tar(r io.Reader) error {
	tr := tar.NewReader(r)
	for first := true; ; first = false {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if first {
				return fmt.Errorf("not a tar archive: %w", err)
			}
			return fmt.Errorf("tar: %w", err)
		}
		if err := w.tarEntry(hdr, tr); err != nil {
			return err
		}
	}
}

func (w *writer) tarEntry(hdr *tar.Header, r io.Reader) error {
	if hdr.Typeflag == tar.TypeXGlobalHeader {
		return nil
	}
	if err := w.entry(); err != nil {
		return err
	}
	name, link, err := tarRule(hdr)
	if err != nil || name == "" {
		return err
	}
	mode := fs.FileMode(hdr.Mode) & fs.ModePerm
	switch hdr.Typeflag {
	case tar.TypeDir:
		return w.dir(name)
	case tar.TypeSymlink:
		return w.symlink(name, hdr.Linkname)
	case tar.TypeLink:
		if err := w.parent(name); err != nil {
			return err
		}
		return w.root.Link(link, name)
	}
	if hdr.Size > w.left {
		return sizeError(w.limit)
	}
	return w.file(name, mode, r)
}

func (w *writer) zip(r io.ReaderAt, size int64) error {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return fmt.Errorf("zip: %w", err)
	}
	for _, f := range zr.File {
		if err := w.entry(); err != nil {
			return err
		}
		if err := w.zipEntry(f); err != nil {
			return err
		}
	}
	return nil
}

func (w *writer) zipEntry(f *zip.File) error {
	name, err := zipRule(f)
	if err != nil || name == "" {
		return err
	}
	mode := f.Mode()
	if mode.IsDir() {
		return w.dir(name)
	}
	rc, err := f.Open()
	if err != nil {
		return fmt.Errorf("zip %s: %w", name, err)
	}
	defer rc.Close()
	if mode&fs.ModeSymlink != 0 {
		target, err := io.ReadAll(io.LimitReader(rc, 4096))
		if err != nil {
			return fmt.Errorf("zip %s: %w", name, err)
		}
		return w.symlink(name, string(target))
	}
	return w.file(name, mode.Perm(), rc)
}

func (w *writer) dir(name string) error { return w.root.MkdirAll(name, 0o755) }

func (w *writer) parent(name string) error {
	if d := path.Dir(name); d != "." {
		return w.root.MkdirAll(d, 0o755)
	}
	return nil
}

// file writes a regular file, replacing an earlier entry of the same name,
// and counts the bytes actually written against the limit.
func (w *writer) file(name string, mode fs.FileMode, r io.Reader) error {
	if err := w.parent(name); err != nil {
		return err
	}
	if st, err := w.root.Lstat(name); err == nil && !st.IsDir() {
		if err := w.root.Remove(name); err != nil {
			return err
		}
	}
	f, err := w.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode|0o600)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.LimitReader(r, w.left+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if w.left -= n; w.left < 0 {
		return sizeError(w.limit)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

func (w *writer) symlink(name, target string) error {
	if err := checkLink(name, target); err != nil {
		return err
	}
	if err := w.parent(name); err != nil {
		return err
	}
	return w.root.Symlink(target, name)
}

func typeName(t byte) string {
	switch t {
	case tar.TypeChar:
		return "character device"
	case tar.TypeBlock:
		return "block device"
	case tar.TypeFifo:
		return "FIFO"
	}
	return fmt.Sprintf("special entry (type %q)", t)
}
