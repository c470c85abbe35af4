package packages

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
)

// Errors a caller maps to HTTP codes.
var (
	ErrTooLarge = errors.New("package too large")
	ErrChecksum = errors.New("package checksum mismatch")
	ErrNotFound = errors.New("package not found")
	ErrBadHash  = errors.New("not a sha256")
)

// DefaultMaxBytes is the default size limit of one package (1 GiB, the
// executor's download limit).
const DefaultMaxBytes int64 = 1 << 30

// tmpPrefix names files being written; they are never served.
const tmpPrefix = ".incoming-"

// Info describes a stored package.
type Info struct {
	SHA256  string
	Size    int64
	ModTime time.Time // last stored or re-stored (drives the GC grace)
}

// Store keeps packages in one directory, each under its sha256.
type Store struct {
	dir   string
	max   int64
	clock clock.Clock
}

// NewStore opens (creating) dir. max bounds a package's size (<= 0: DefaultMaxBytes).
func NewStore(dir string, max int64, clk clock.Clock) (*Store, error) {
	if max <= 0 {
		max = DefaultMaxBytes
	}
	if clk == nil {
		clk = clock.Real{}
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("packages: open %s: %w", dir, err)
	}
	return &Store{dir: dir, max: max, clock: clk}, nil
}

// MaxBytes is the size limit of one package.
func (s *Store) MaxBytes() int64 { return s.max }

// ValidSHA reports whether h is a lower-case hex sha256.
func ValidSHA(h string) bool {
	if len(h) != 64 {
		return false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// NormalizeSHA lower-cases a client's hex sha256 and checks it.
func NormalizeSHA(h string) (string, error) {
	h = strings.ToLower(strings.TrimSpace(h))
	if !ValidSHA(h) {
		return "", fmt.Errorf("%w: %q must be 64 hex digits", ErrBadHash, h)
	}
	return h, nil
}

func (s *Store) path(sha string) string { return filepath.Join(s.dir, sha) }

// Pending is a received package not yet stored: Commit or Discard it.
type Pending struct {
	s    *Store
	tmp  string
	sha  string
	size int64
	head []byte // the first app.SniffBytes bytes, to tell the format
}

// SHA256 is the hex sha256 of what was received.
func (p *Pending) SHA256() string { return p.sha }

// Size is the number of bytes received.
func (p *Pending) Size() int64 { return p.size }

// Format tells what the package is by its first bytes: an archive the
// executor extracts, or a single program (#! script, ELF executable) it
// runs; anything else is an error wrapping app.ErrNotPackage that an
// upload answers with 400 (the executor would refuse it too).
func (p *Pending) Format() (app.PackageFormat, error) { return app.CheckPackage(p.head) }

// Open opens what was received, for reading (the caller closes it).
func (p *Pending) Open() (*os.File, error) { return os.Open(p.tmp) }

// Receive streams r into a temporary file in the store, hashing it, and
// fsyncs it. More than MaxBytes is ErrTooLarge (nothing is kept).
func (s *Store) Receive(ctx context.Context, r io.Reader) (*Pending, error) {
	f, err := os.CreateTemp(s.dir, tmpPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("packages: receive: %w", err)
	}
	h := sha256.New()
	head := &headWriter{max: app.SniffBytes}
	n, err := copyCtx(ctx, io.MultiWriter(f, h, head), io.LimitReader(r, s.max+1))
	if err == nil && n > s.max {
		err = fmt.Errorf("%w: larger than the %d-byte limit (package_max_bytes)", ErrTooLarge, s.max)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		if errors.Is(err, ErrTooLarge) {
			return nil, err
		}
		return nil, fmt.Errorf("packages: receive: %w", err)
	}
	return &Pending{s: s, tmp: f.Name(), sha: hex.EncodeToString(h.Sum(nil)), size: n, head: head.b}, nil
}

// headWriter keeps the first max bytes written to it.
type headWriter struct {
	b   []byte
	max int
}

func (w *headWriter) Write(p []byte) (int, error) {
	if room := w.max - len(w.b); room > 0 {
		w.b = append(w.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// Commit stores the package under its sha256 (atomically: rename, then an
// fsync of the directory). want, when set, must equal the received sha256
// (ErrChecksum otherwise, and nothing is stored). Storing content already
// present keeps the stored file and only refreshes its time.
func (p *Pending) Commit(want string) (Info, error) {
	defer p.Discard()
	if want != "" && want != p.sha {
		return Info{}, fmt.Errorf("%w: the sha256 sent by the client, %s, does not match the %d bytes received, whose sha256 is %s; nothing was stored",
			ErrChecksum, want, p.size, p.sha)
	}
	return p.s.place(p.tmp, p.sha, p.size)
}

// Discard removes the temporary file. Safe after Commit.
func (p *Pending) Discard() { os.Remove(p.tmp) }

// place renames tmp to its content address and refreshes the time GC reads.
func (s *Store) place(tmp, sha string, size int64) (Info, error) {
	dst := s.path(sha)
	now := s.clock.Now()
	if _, err := os.Stat(dst); err == nil {
		if err := os.Chtimes(dst, now, now); err != nil {
			return Info{}, fmt.Errorf("packages: store %s: %w", sha, err)
		}
		return Info{SHA256: sha, Size: size, ModTime: now}, nil
	}
	if err := os.Chmod(tmp, 0o440); err != nil {
		return Info{}, fmt.Errorf("packages: store %s: %w", sha, err)
	}
	if err := os.Chtimes(tmp, now, now); err != nil {
		return Info{}, fmt.Errorf("packages: store %s: %w", sha, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return Info{}, fmt.Errorf("packages: store %s: %w", sha, err)
	}
	if err := syncDir(s.dir); err != nil {
		return Info{}, fmt.Errorf("packages: store %s: fsync directory: %w", sha, err)
	}
	return Info{SHA256: sha, Size: size, ModTime: now}, nil
}

// Has reports whether a package is stored.
func (s *Store) Has(sha string) bool {
	if !ValidSHA(sha) {
		return false
	}
	_, err := os.Stat(s.path(sha))
	return err == nil
}

// Open opens a stored package for reading.
func (s *Store) Open(sha string) (*os.File, Info, error) {
	if !ValidSHA(sha) {
		return nil, Info{}, fmt.Errorf("%w: %q", ErrBadHash, sha)
	}
	f, err := os.Open(s.path(sha))
	if errors.Is(err, os.ErrNotExist) {
		return nil, Info{}, fmt.Errorf("%w: %s", ErrNotFound, sha)
	}
	if err != nil {
		return nil, Info{}, fmt.Errorf("packages: open %s: %w", sha, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, Info{}, fmt.Errorf("packages: open %s: %w", sha, err)
	}
	return f, Info{SHA256: sha, Size: st.Size(), ModTime: st.ModTime()}, nil
}

// tempFile is a file being received, or left behind by a crash.
type tempFile struct {
	name    string
	modTime time.Time
}

// List returns the stored packages, sorted by sha256.
func (s *Store) List() ([]Info, error) {
	pkgs, _, err := s.list()
	return pkgs, err
}

// list returns the stored packages and the temporary files (for GC).
func (s *Store) list() (pkgs []Info, temps []tempFile, err error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, nil, fmt.Errorf("packages: list: %w", err)
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue // removed meanwhile, or not ours
		}
		switch {
		case ValidSHA(e.Name()):
			pkgs = append(pkgs, Info{SHA256: e.Name(), Size: fi.Size(), ModTime: fi.ModTime()})
		case strings.HasPrefix(e.Name(), tmpPrefix):
			temps = append(temps, tempFile{e.Name(), fi.ModTime()})
		}
	}
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].SHA256 < pkgs[j].SHA256 })
	return pkgs, temps, nil
}

// remove deletes a stored package or a temporary file by name.
func (s *Store) remove(name string) error {
	if err := os.Remove(filepath.Join(s.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("packages: remove %s: %w", name, err)
	}
	return nil
}

// copyCtx is io.Copy that stops when ctx ends.
func copyCtx(ctx context.Context, dst io.Writer, src io.Reader) (int64, error) {
	buf := make([]byte, 256<<10)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		k, rerr := src.Read(buf)
		if k > 0 {
			w, werr := dst.Write(buf[:k])
			n += int64(w)
			if werr != nil {
				return n, werr
			}
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
