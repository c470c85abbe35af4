package embedded

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// maxRead caps one /files/read response, like a Mesos agent's page limit.
const maxRead = 1 << 20

// handleFilesRead serves GET /files/read?path=&offset=&length= with Mesos
// semantics: {"data": "...", "offset": N}; offset=-1 returns the size.
// Only files inside WorkDir can be read; anything else is "not found".
func (o *operatorAPI) handleFilesRead(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	path := q.Get("path")
	if path == "" {
		writeError(w, errorf(http.StatusBadRequest, "Expecting 'path=value' in query"))
		return
	}
	offset, err := strconv.ParseInt(q.Get("offset"), 10, 64)
	if err != nil || offset < -1 {
		writeError(w, errorf(http.StatusBadRequest, "Failed to parse offset: %q", q.Get("offset")))
		return
	}
	length := int64(-1)
	if s := q.Get("length"); s != "" {
		if length, err = strconv.ParseInt(s, 10, 64); err != nil || length < -1 {
			writeError(w, errorf(http.StatusBadRequest, "Failed to parse length: %q", s))
			return
		}
	}
	f, herr := o.openSandboxFile(path)
	if herr != nil {
		writeError(w, herr)
		return
	}
	defer f.Close()
	data, offset, herr := readAt(f, offset, length)
	if herr != nil {
		writeError(w, herr)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"data": string(data), "offset": offset})
}

// openSandboxFile opens path if it resolves (symlinks included) to a
// regular file inside WorkDir.
func (o *operatorAPI) openSandboxFile(path string) (*os.File, *httpError) {
	notFound := errorf(http.StatusNotFound, "File not found")
	if !filepath.IsAbs(path) {
		return nil, notFound
	}
	root, err := filepath.EvalSymlinks(o.c.cfg.WorkDir)
	if err != nil {
		return nil, notFound
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(path))
	if err != nil {
		return nil, notFound
	}
	if real != root && !strings.HasPrefix(real, root+string(filepath.Separator)) {
		return nil, notFound
	}
	f, err := os.Open(real)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return nil, errorf(http.StatusForbidden, "Permission denied")
		}
		return nil, notFound
	}
	if st, err := f.Stat(); err != nil || st.IsDir() {
		f.Close()
		return nil, errorf(http.StatusBadRequest, "Cannot read a directory")
	}
	return f, nil
}

func readAt(f *os.File, offset, length int64) ([]byte, int64, *httpError) {
	st, err := f.Stat()
	if err != nil {
		return nil, 0, errorf(http.StatusInternalServerError, "Failed to stat file: %v", err)
	}
	if offset == -1 {
		return nil, st.Size(), nil
	}
	if length == -1 || length > maxRead {
		length = maxRead
	}
	if offset >= st.Size() || length == 0 {
		return nil, offset, nil
	}
	buf := make([]byte, min(length, st.Size()-offset))
	n, err := f.ReadAt(buf, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, errorf(http.StatusInternalServerError, "Failed to read file: %v", err)
	}
	return buf[:n], offset, nil
}
