package tenant

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Range is a range of uids (and the gids of the same numbers) given to
// tenants, Lo to Hi inclusive.
type Range struct{ Lo, Hi int }

// DefaultRange is above the uids systemd gives containers
// (524288-1879048191) and below 2^31, which some tools mistake for
// negative: 65536 tenants.
var DefaultRange = Range{Lo: 1879048192, Hi: 1879048192 + 65535}

func (r Range) String() string { return fmt.Sprintf("%d-%d", r.Lo, r.Hi) }

// ParseRange reads "LO-HI".
func ParseRange(s string) (Range, error) {
	lo, hi, ok := strings.Cut(strings.TrimSpace(s), "-")
	a, err1 := strconv.Atoi(strings.TrimSpace(lo))
	b, err2 := strconv.Atoi(strings.TrimSpace(hi))
	if !ok || err1 != nil || err2 != nil || a < 1000 || b < a || b > 1<<31-2 {
		return Range{}, fmt.Errorf("tenant: uid range %q must be LO-HI with 1000 <= LO <= HI < 2^31-1", s)
	}
	return Range{Lo: a, Hi: b}, nil
}

// Book gives each tenant a uid of its own from a Range, the lowest free
// one, and records it in a file (JSON, tenant → uid, mode 0600) before
// answering, so a tenant keeps its uid across restarts and two tenants
// never share one. A recorded uid outside the range (the range changed)
// is given out again. Safe for concurrent use.
type Book struct {
	path string
	r    Range

	mu   sync.Mutex
	uids map[string]int
}

// OpenBook reads the book at path (none yet: empty).
func OpenBook(path string, r Range) (*Book, error) {
	b := &Book{path: path, r: r, uids: map[string]int{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return b, nil
	}
	if err == nil {
		err = json.Unmarshal(data, &b.uids)
	}
	if err != nil {
		return nil, fmt.Errorf("tenant: read %s: %w", path, err)
	}
	for t, u := range b.uids {
		if u < r.Lo || u > r.Hi {
			delete(b.uids, t)
		}
	}
	return b, nil
}

// UID is tenant's uid, given out and recorded at its first call.
func (b *Book) UID(tenant string) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if u, ok := b.uids[tenant]; ok {
		return u, nil
	}
	used := make(map[int]bool, len(b.uids))
	for _, u := range b.uids {
		used[u] = true
	}
	for u := b.r.Lo; u <= b.r.Hi; u++ {
		if used[u] {
			continue
		}
		b.uids[tenant] = u
		if err := b.save(); err != nil {
			delete(b.uids, tenant)
			return 0, err
		}
		return u, nil
	}
	return 0, fmt.Errorf("tenant: every uid of %s is taken: widen the range", b.r)
}

func (b *Book) save() error {
	data, err := json.MarshalIndent(b.uids, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(b.path), ".tenants-*")
	if err != nil {
		return fmt.Errorf("tenant: record uids: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err = tmp.Write(data); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), b.path)
	}
	if err != nil {
		return fmt.Errorf("tenant: record uids in %s: %w", b.path, err)
	}
	return nil
}
