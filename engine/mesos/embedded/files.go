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
	"syscall"

	"github.com/ejcloud/elasticjob/internal/safeopen"
)

// maxRead caps one /files/read response, like a Mesos agent's page limit.
const maxRead = 1 << 20

// handleFilesRead serves GET /files/read?path=&offset=&length= with Mesos
// semantics: {"data": "...", "offset": N}; offset=-1 returns the size.
// Only files in the sandbox of an executor run this agent knows can be
// read (sandboxFile); anything else is "not found".
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

// openSandboxFile opens path, a regular file in a known sandbox, as
// safeopen opens it: the agent (root, with tenants) reads files a tenant
// owns, so no link in any component is followed, a FIFO does not block,
// and only a regular file of the sandbox's owner is served. A refusal for
// what a tenant planted (a link, another owner's file, a FIFO, a path
// outside every sandbox) is logged; a plain missing file is not (the
// engine looks for a log in every run of an app).
func (o *operatorAPI) openSandboxFile(path string) (*os.File, *httpError) {
	notFound := errorf(http.StatusNotFound, "File not found")
	sandbox, rel, ok := o.c.sandboxFile(path)
	if !ok {
		if strings.HasPrefix(filepath.Clean(path), o.c.cfg.WorkDir) {
			o.c.log.Warn("files: refused a path outside every executor sandbox", "path", path)
		}
		return nil, notFound
	}
	root, err := safeopen.OpenRootBeneath(o.c.cfg.WorkDir, sandbox)
	if err != nil {
		return nil, notFound // collected, or never made (a run being prepared)
	}
	defer root.Close()
	f, err := root.Open(rel, 0)
	switch {
	case err == nil:
		return f, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, notFound
	case errors.Is(err, safeopen.ErrNotRegular):
		o.c.log.Warn("files: refused a file that is not a regular file", "path", path, "err", err)
		return nil, errorf(http.StatusBadRequest, "Not a regular file")
	default: // a link (ELOOP, ENOTDIR, EXDEV), another owner's file
		o.c.log.Warn("files: refused a sandbox file (a link, or another owner's file)", "path", path, "err", err)
		return nil, notFound
	}
}

// sandboxFile splits path into the sandbox of an executor run this agent
// knows (relative to WorkDir) and the file's path inside it. path must be
// clean and absolute, below WorkDir/slaves in the agent's layout
// <agent>/frameworks/<fw>/executors/<exec>/runs/<container>; the run must
// be live, completed or archived (runs/latest, a link, is not served).
func (c *Cluster) sandboxFile(path string) (sandbox, rel string, ok bool) {
	root := c.sandboxRoot() + "/"
	if !filepath.IsAbs(path) || filepath.Clean(path) != path || !strings.HasPrefix(path, root) {
		return "", "", false
	}
	parts := strings.SplitN(path[len(root):], "/", 8)
	if len(parts) < 7 || parts[1] != "frameworks" || parts[3] != "executors" || parts[5] != "runs" {
		return "", "", false
	}
	dir := root + strings.Join(parts[:7], "/")
	if len(parts) == 8 {
		rel = parts[7]
	}
	c.mu.Lock()
	known := c.knownRun(parts[2], dir)
	c.mu.Unlock()
	if !known {
		return "", "", false
	}
	return strings.TrimPrefix(dir, c.cfg.WorkDir+"/"), rel, true
}

// knownRun says whether dir is the sandbox of an executor run of
// framework fwID that this agent runs or ran (and has not collected).
func (c *Cluster) knownRun(fwID, dir string) bool {
	if c.live[dir] != nil {
		return true
	}
	for _, a := range c.archived[fwID] {
		if a.dir == dir {
			return true
		}
	}
	if fw := c.frameworks[fwID]; fw != nil {
		for _, e := range fw.completed {
			if e.dir == dir {
				return true
			}
		}
	}
	return false
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
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, syscall.EAGAIN) {
		return nil, 0, errorf(http.StatusInternalServerError, "Failed to read file: %v", err)
	}
	return buf[:n], offset, nil
}
