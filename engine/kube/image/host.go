package image

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// JavaJarPath is where an image holds the Java library (the executor looks there:
// executor.JavaImageJar).
const JavaJarPath = "/usr/share/elasticjob/elasticjob-cloud-executor.jar"

// hostTree collects host paths as the host has them: every parent directory, and each
// symlink met on the way kept as a symlink, its target added too (so /lib64/ld-linux…
// and /usr/bin/java → /etc/alternatives/… resolve inside the image as on the host).
type hostTree struct {
	entries map[string]entry
	order   []string
}

func newHostTree() *hostTree { return &hostTree{entries: map[string]entry{}} }

func (h *hostTree) put(e entry) {
	if _, ok := h.entries[e.name]; ok {
		return
	}
	h.entries[e.name] = e
	h.order = append(h.order, e.name)
}

// add adds the absolute host path p.
func (h *hostTree) add(p string) error { return h.addDepth(p, 0) }

func (h *hostTree) addDepth(p string, depth int) error {
	if depth > 40 {
		return fmt.Errorf("image: %s: too many levels of symbolic links", p)
	}
	if !filepath.IsAbs(p) {
		return fmt.Errorf("image: %s is not an absolute path", p)
	}
	parts := strings.Split(strings.Trim(filepath.Clean(p), "/"), "/")
	cur := "/"
	for i, part := range parts {
		if part == "" {
			continue
		}
		next := filepath.Join(cur, part)
		st, err := os.Lstat(next)
		if err != nil {
			return fmt.Errorf("image: %w", err)
		}
		name := strings.TrimPrefix(next, "/")
		switch {
		case st.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(next)
			if err != nil {
				return fmt.Errorf("image: %w", err)
			}
			h.put(entry{name: name, link: target, mode: 0o777})
			abs := target
			if !filepath.IsAbs(abs) {
				abs = filepath.Join(cur, target)
			}
			if err := h.addDepth(abs, depth+1); err != nil {
				return err
			}
			real, err := filepath.EvalSymlinks(next)
			if err != nil {
				return fmt.Errorf("image: %w", err)
			}
			cur = real
		case st.IsDir():
			h.put(entry{name: name + "/", mode: int64(st.Mode().Perm()), dir: true})
			cur = next
		case i == len(parts)-1 && st.Mode().IsRegular():
			data, err := os.ReadFile(next)
			if err != nil {
				return fmt.Errorf("image: %w", err)
			}
			h.put(entry{name: name, mode: int64(st.Mode().Perm()), data: data})
		default:
			return fmt.Errorf("image: %s is neither a file, a directory nor a symlink", next)
		}
	}
	return nil
}

func (h *hostTree) list() []entry {
	out := make([]entry, 0, len(h.order))
	for _, n := range h.order {
		out = append(out, h.entries[n])
	}
	return out
}
