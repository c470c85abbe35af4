package embedded

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"sort"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/ejcloud/elasticjob/internal/safeopen"
)

// maxBrowse bounds the entries one /files/browse answers.
const maxBrowse = 10000

// fileEntry is one entry of /files/browse, as a Mesos agent answers it.
type fileEntry struct {
	Path  string  `json:"path"`
	NLink uint64  `json:"nlink"`
	Size  int64   `json:"size"`
	MTime float64 `json:"mtime"`
	Mode  string  `json:"mode"`
	UID   string  `json:"uid"`
	GID   string  `json:"gid"`
}

// handleFilesBrowse serves GET /files/browse?path=DIR with Mesos
// semantics: the entries of a directory, a JSON array. Only directories
// in a known sandbox are listed, opened as /files/read opens files (no
// link followed, the sandbox owner's alone); each entry is described by
// fstatat without following it, so a link shows as a link and is not
// read.
func (o *operatorAPI) handleFilesBrowse(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Query().Get("path")
	if path == "" {
		writeError(w, errorf(http.StatusBadRequest, "Expecting 'path=value' in query"))
		return
	}
	sandbox, rel, ok := o.c.sandboxFile(path)
	if !ok {
		writeError(w, errorf(http.StatusNotFound, "Directory not found"))
		return
	}
	root, err := safeopen.OpenRootBeneath(o.c.cfg.WorkDir, sandbox)
	if err != nil {
		writeError(w, errorf(http.StatusNotFound, "Directory not found"))
		return
	}
	defer root.Close()
	d, err := root.OpenDir(rel)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			o.c.log.Warn("files: refused to list a sandbox directory (a link, or another owner's)", "path", path, "err", err)
		}
		writeError(w, errorf(http.StatusNotFound, "Directory not found"))
		return
	}
	defer d.Close()
	names, err := d.Readdirnames(maxBrowse)
	if err != nil && len(names) == 0 && !errors.Is(err, io.EOF) {
		writeError(w, errorf(http.StatusInternalServerError, "Failed to list: %v", err))
		return
	}
	sort.Strings(names)
	out := make([]fileEntry, 0, len(names))
	for _, n := range names {
		var st unix.Stat_t
		if unix.Fstatat(int(d.Fd()), n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue // gone meanwhile
		}
		out = append(out, fileEntry{Path: path + "/" + n, NLink: uint64(st.Nlink), Size: st.Size,
			MTime: float64(st.Mtim.Sec) + float64(st.Mtim.Nsec)/1e9, Mode: modeString(st.Mode),
			UID: strconv.FormatUint(uint64(st.Uid), 10), GID: strconv.FormatUint(uint64(st.Gid), 10)})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// modeString is st_mode as ls shows it ("drwx------", "-rw-r--r--").
func modeString(m uint32) string {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	}
	return mode.String()
}
