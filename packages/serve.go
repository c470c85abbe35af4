package packages

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// PeerHeader marks a pull by another instance: an instance lacking the
// package answers 404 at once instead of pulling it itself (no ping-pong).
const PeerHeader = "X-Elasticjob-Package-Peer"

// ServeHTTP serves GET and HEAD of /packages/{sha256}/{token}/{name}
// without authentication: the token is the credential. A package this
// instance lacks (a new instance, a leader elected before its pull ended)
// is pulled from a peer first, so any instance can serve any package.
func (h *Host) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	ref, ok := h.links.parsePath(r.URL.Path)
	if !ok {
		http.Error(w, "no such package", http.StatusNotFound) // never say whether the hash exists
		return
	}
	f, info, err := h.store.Open(ref.SHA256)
	if errors.Is(err, ErrNotFound) && r.Header.Get(PeerHeader) == "" {
		ctx, cancel := context.WithTimeout(r.Context(), h.o.EnsureWait)
		err = h.Ensure(ctx, ref)
		cancel()
		if err == nil {
			f, info, err = h.store.Open(ref.SHA256)
		} else {
			h.log.Warn("packages: cannot serve a package this instance lacks", "sha256", ref.SHA256, "err", err)
			err = ErrNotFound
		}
	}
	if errors.Is(err, ErrNotFound) {
		http.Error(w, "no such package on this instance", http.StatusNotFound)
		return
	}
	if err != nil {
		h.log.Error("packages: serve", "sha256", ref.SHA256, "err", err)
		http.Error(w, "package unreadable", http.StatusInternalServerError)
		return
	}
	defer f.Close()
	hd := w.Header()
	hd.Set("Content-Type", "application/octet-stream")
	hd.Set("Cache-Control", "private, max-age=31536000, immutable")
	hd.Set("ETag", `"`+info.SHA256+`"`)
	hd.Set("X-Content-SHA256", info.SHA256)
	http.ServeContent(w, r, ref.Name, time.Time{}, f) // ranges and If-None-Match
}
