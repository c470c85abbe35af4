package tenant

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// DefaultLockDir holds the uid ranges of the schedulers running on this
// host, one file each, locked while its scheduler runs.
const DefaultLockDir = "/run/elasticjob/uid-ranges"

// LockRange claims r on this host for owner (the agent's work directory)
// until release is called or the process ends: a file in dir, named after
// owner, holds r and an exclusive flock. It fails when another live
// claim (a file whose flock is held) overlaps r, naming a free range of
// the same size, since two schedulers giving out the same uids would let
// one's tenants reach the other's files and processes. Claims of
// schedulers gone (no flock held) are removed.
func LockRange(dir string, r Range, owner string) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("tenant: uid range lock: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("tenant: uid range lock: %w", err)
	}
	defer d.Close()
	// One scheduler at a time claims and checks: two starting at once
	// see each other's claims.
	if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("tenant: uid range lock %s: %w", dir, err)
	}
	defer syscall.Flock(int(d.Fd()), syscall.LOCK_UN)
	sum := sha256.Sum256([]byte(owner))
	mine := filepath.Join(dir, hex.EncodeToString(sum[:8])+".range")
	held, err := heldRanges(dir, mine)
	if err != nil {
		return nil, err
	}
	for path, h := range held {
		if h.r.Lo <= r.Hi && r.Lo <= h.r.Hi {
			return nil, fmt.Errorf("tenant: tenant_uid_range %s overlaps %s, held by the scheduler of %s (%s): two schedulers' tenants would share uids; set tenant_uid_range to a free range, e.g. %s",
				r, h.r, h.owner, path, nextFree(r, held))
		}
	}
	f, err := os.OpenFile(mine, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("tenant: uid range lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("tenant: uid range lock %s is held: another scheduler runs from %s", mine, owner)
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(r.String()+" "+owner+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("tenant: uid range lock: %w", err)
	}
	return func() { _ = os.Remove(mine); f.Close() }, nil
}

type claim struct {
	r     Range
	owner string
}

// heldRanges are the live claims in dir but mine; dead ones are removed.
func heldRanges(dir, mine string) (map[string]claim, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.range"))
	if err != nil {
		return nil, err
	}
	out := map[string]claim{}
	for _, p := range names {
		if p == mine {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if err == nil { // nobody holds it: its scheduler is gone
			_ = os.Remove(p)
			f.Close()
			continue
		}
		b, rerr := os.ReadFile(p)
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) || rerr != nil {
			continue
		}
		rs, owner, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
		r, perr := ParseRange(rs)
		if perr != nil {
			return nil, fmt.Errorf("tenant: uid range lock %s: %w", p, perr)
		}
		out[p] = claim{r: r, owner: owner}
	}
	return out, nil
}

// nextFree is a range of r's size above every held one.
func nextFree(r Range, held map[string]claim) Range {
	top := r.Hi
	for _, h := range held {
		top = max(top, h.r.Hi)
	}
	return Range{Lo: top + 1, Hi: top + 1 + r.Hi - r.Lo}
}
