package artifacts

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Prefix is the URL path under which artifacts are served.
const Prefix = "/artifacts/"

// File is one served artifact.
type File struct {
	Kind, Name, SHA256 string
	Size               int64
	path               string // the snapshot
}

// Path is the URL path of the file: Prefix + kind/sha256/name.
func (f File) Path() string { return Prefix + f.Kind + "/" + f.SHA256 + "/" + f.Name }

// Server serves snapshots kept in one directory. It is an http.Handler for Prefix.
type Server struct {
	dir   string
	mu    sync.RWMutex
	files map[string]File // by Path()
}

// New returns a Server keeping its snapshots in dir (created when missing).
func New(dir string) (*Server, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("artifacts: %w", err)
	}
	return &Server{dir: dir, files: map[string]File{}}, nil
}

// Add snapshots the file at src and serves it as kind/sha256/name. kind and name must be
// single path segments.
func (s *Server) Add(kind, name, src string) (File, error) {
	for _, seg := range []string{kind, name} {
		if seg == "" || seg == "." || seg == ".." || strings.ContainsAny(seg, "/\\") {
			return File{}, fmt.Errorf("artifacts: add %s: %q is not a single path segment", src, seg)
		}
	}
	f, err := s.snapshot(src)
	if err != nil {
		return File{}, fmt.Errorf("artifacts: add %s: %w", src, err)
	}
	f.Kind, f.Name = kind, name
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[f.Path()] = f
	return f, nil
}

// snapshot copies src into dir/{sha256}, hashing while it copies; an existing snapshot with
// the same hash is reused.
func (s *Server) snapshot(src string) (File, error) {
	in, err := os.Open(src)
	if err != nil {
		return File{}, err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(s.dir, ".snapshot-*")
	if err != nil {
		return File{}, err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), in)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return File{}, err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	dst := filepath.Join(s.dir, sum)
	if err := os.Chmod(tmp.Name(), 0o444); err != nil {
		return File{}, err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return File{}, err
	}
	return File{SHA256: sum, Size: n, path: dst}, nil
}

// ServeHTTP serves GET and HEAD of a known artifact path; anything else is 404 or 405.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	s.mu.RLock()
	f, ok := s.files[r.URL.Path]
	s.mu.RUnlock()
	if !ok {
		http.Error(w, "no such artifact: "+r.URL.Path, http.StatusNotFound)
		return
	}
	file, err := os.Open(f.path)
	if errors.Is(err, os.ErrNotExist) {
		http.Error(w, "artifact snapshot is gone: "+r.URL.Path, http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, "artifact unreadable", http.StatusInternalServerError)
		return
	}
	defer file.Close()
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Set("ETag", `"`+f.SHA256+`"`)
	http.ServeContent(w, r, f.Name, time.Time{}, file)
}
