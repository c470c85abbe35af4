package packages

import "time"

// collect removes the packages no app names once they have been unnamed,
// and unchanged, for the grace period: a launch sent just before an app
// moved to a new version, or a peer pulling the old one, still finds it.
// Temporary files untouched for the grace period (a crash mid-upload) go too.
func (h *Host) collect(want map[string]Ref, now time.Time) {
	pkgs, temps, err := h.store.list()
	if err != nil {
		h.log.Warn("packages: gc", "err", err)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	present := make(map[string]bool, len(pkgs))
	for _, p := range pkgs {
		present[p.SHA256] = true
		if _, named := want[p.SHA256]; named {
			delete(h.unref, p.SHA256)
			continue
		}
		first, seen := h.unref[p.SHA256]
		if !seen {
			h.unref[p.SHA256] = now
			continue
		}
		if _, pulling := h.inflight[p.SHA256]; pulling || now.Sub(first) < h.o.Grace || now.Sub(p.ModTime) < h.o.Grace {
			continue
		}
		if err := h.store.remove(p.SHA256); err != nil {
			h.log.Warn("packages: gc", "err", err)
			continue
		}
		delete(h.unref, p.SHA256)
		h.log.Info("packages: removed a package no app names", "sha256", p.SHA256, "size", p.Size, "unnamed_since", first)
	}
	for sha := range h.unref {
		if !present[sha] {
			delete(h.unref, sha)
		}
	}
	for sha := range h.failed {
		if _, named := want[sha]; !named {
			delete(h.failed, sha)
		}
	}
	for _, t := range temps {
		if now.Sub(t.modTime) >= h.o.Grace {
			if err := h.store.remove(t.name); err != nil {
				h.log.Warn("packages: gc", "err", err)
			}
		}
	}
}
