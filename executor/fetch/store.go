package fetch

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/ejcloud/elasticjob/executor/internal/bytesize"
)

const (
	blobName = "blob"
	metaName = "meta.json"
	lockName = "lock" // exclusive while the entry is fetched or evicted
	useName  = "use"  // shared while a Blob of the entry is held; its mtime is the last use
)

// meta is meta.json: what is known about the blob beside it.
type meta struct {
	URL          string    `json:"url"`
	ETag         string    `json:"etag,omitempty"`
	LastModified string    `json:"lastModified,omitempty"`
	SHA256       string    `json:"sha256"`
	Size         int64     `json:"size"`
	ModTime      int64     `json:"modTime,omitempty"` // file URLs: source mtime, unix ns
	FetchedAt    time.Time `json:"fetchedAt"`
}

func readMeta(dir string) (*meta, error) {
	b, err := os.ReadFile(filepath.Join(dir, metaName))
	if err != nil {
		return nil, err
	}
	var m meta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	st, err := os.Stat(filepath.Join(dir, blobName))
	if err != nil || st.Size() != m.Size || m.SHA256 == "" {
		return nil, fmt.Errorf("cache entry %s is incomplete", dir)
	}
	return &m, nil
}

// LimitError says a download passed the size limit.
type LimitError struct{ Limit int64 }

func (e *LimitError) Error() string {
	return fmt.Sprintf("exceeds the %s download limit", bytesize.Format(e.Limit))
}

// store streams r into dir/blob through a temporary file, hashing it, and
// then writes dir/meta.json. m carries the validators; store fills the rest.
func store(dir string, r io.Reader, limit int64, m *meta) error {
	tmp, err := os.CreateTemp(dir, "blob-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(r, limit+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if n > limit {
		return &LimitError{Limit: limit}
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, blobName)); err != nil {
		return err
	}
	m.SHA256, m.Size, m.FetchedAt = hex.EncodeToString(h.Sum(nil)), n, time.Now().UTC()
	return writeMeta(dir, m)
}

func writeMeta(dir string, m *meta) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, metaName+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, metaName))
}
