package safeopen

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Errors of Root's methods besides the system's (fs.ErrNotExist for a
// missing name, syscall.ELOOP or EXDEV for a link on the way).
var (
	// ErrPath is a name that is not a clean relative path beneath the root.
	ErrPath = errors.New("safeopen: not a clean relative path")
	// ErrNotRegular is a name that is not a regular file (a directory, a
	// FIFO, a device, a socket).
	ErrNotRegular = errors.New("safeopen: not a regular file")
	// ErrNotDir is a name that is not a directory.
	ErrNotDir = errors.New("safeopen: not a directory")
	// ErrOwner is a file of another owner than the root's.
	ErrOwner = errors.New("safeopen: owned by another user")
	// ErrTooLarge is a file larger than the bound asked for.
	ErrTooLarge = errors.New("safeopen: file too large")
)

// Root is a directory opened once, whose owner every file opened beneath
// it must have: the tenant's sandbox, owned by the tenant's uid (or by the
// agent's own when tenants are not isolated).
type Root struct {
	fd   int
	uid  uint32
	path string
}

// OpenRoot opens dir, a path the caller trusts (every component of it is
// the caller's or root's), as a root. The files opened beneath it must be
// owned by dir's owner.
func OpenRoot(dir string) (*Root, error) {
	fd, err := retry(func() (int, error) {
		return unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: dir, Err: err}
	}
	return &Root{fd: fd, uid: st.Uid, path: dir}, nil
}

// OpenRootBeneath opens the directory rel beneath the trusted directory
// base without following a link (rel's components may be anyone's), as
// a root owned by whoever owns it.
func OpenRootBeneath(base, rel string) (*Root, error) {
	b, err := OpenRoot(base)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	fd, err := b.open(rel, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: rel, Err: err}
	}
	return &Root{fd: fd, uid: st.Uid, path: b.path + "/" + rel}, nil
}

// UID is the owner every file opened beneath r must have.
func (r *Root) UID() int { return int(r.uid) }

// Close releases r.
func (r *Root) Close() error { return unix.Close(r.fd) }

// Open opens the regular file name beneath r for reading: refused when a
// component is a link or "..", when it is not a regular file of r's
// owner, or when it is larger than maxSize (<= 0: no bound).
func (r *Root) Open(name string, maxSize int64) (*os.File, error) {
	fd, err := r.open(name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	if err := r.check(&st, unix.S_IFREG, maxSize); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), r.path+"/"+name), nil
}

// OpenDir opens the directory name beneath r ("" or "." is r itself) for
// listing, on the same terms as Open.
func (r *Root) OpenDir(name string) (*os.File, error) {
	fd, err := r.open(name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	if err := r.check(&st, unix.S_IFDIR, 0); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), r.path+"/"+name), nil
}

func (r *Root) check(st *unix.Stat_t, kind uint32, maxSize int64) error {
	switch {
	case st.Mode&unix.S_IFMT != kind && kind == unix.S_IFDIR:
		return ErrNotDir
	case st.Mode&unix.S_IFMT != kind:
		return ErrNotRegular
	case st.Uid != r.uid:
		return fmt.Errorf("%w (uid %d, want %d)", ErrOwner, st.Uid, r.uid)
	case maxSize > 0 && st.Size > maxSize:
		return fmt.Errorf("%w (%d bytes, at most %d)", ErrTooLarge, st.Size, maxSize)
	}
	return nil
}

// open opens name beneath r with flags, following no link.
func (r *Root) open(name string, flags int) (int, error) {
	if name == "" {
		name = "."
	}
	if err := Valid(name); err != nil {
		return -1, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	fd, err := openBeneath(r.fd, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return fd, nil
}

// Valid says whether name is a clean relative path with no ".." and no
// NUL: what Root's methods accept ("." is the root itself).
func Valid(name string) error {
	if name == "." {
		return nil
	}
	if name == "" || strings.HasPrefix(name, "/") || strings.ContainsRune(name, 0) {
		return ErrPath
	}
	for part := range strings.SplitSeq(name, "/") {
		if part == "" || part == "." || part == ".." {
			return ErrPath
		}
	}
	return nil
}

func retry(f func() (int, error)) (int, error) {
	for {
		fd, err := f()
		if err != unix.EINTR {
			return fd, err
		}
	}
}
