package extract

import (
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// maxLinkHops is how many symlinks a resolution follows before it counts
// as a loop (Linux gives up after 40 with ELOOP), which leads nowhere.
const maxLinkHops = 40

// checkLinks resolves every symlink of the finished tree as the kernel
// would, through chains of links (components that do not exist yet taken
// lexically), and fails when one leads outside. checkLink judged each
// target from the link's own directory, which is not enough once links
// combine: a link to a shallower directory (x -> .) moves the meaning of a
// later ".." (y -> x/.. is the parent of the root), and a hard link can
// move a symlink to a shallower directory (d/s -> .. linked as h).
func (w *writer) checkLinks() error {
	return fs.WalkDir(w.root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return err
		}
		target, err := w.root.Readlink(name)
		if err != nil {
			return err
		}
		if w.leaves(path.Dir(name), target) {
			return fmt.Errorf("symlink %q -> %q points outside the extraction directory", name, target)
		}
		return nil
	})
}

// leaves reports whether following target from directory dir (both
// slash-separated, relative to the root) leaves the root.
func (w *writer) leaves(dir, target string) bool {
	var at []string // the directory reached, physically
	if dir != "." {
		at = strings.Split(dir, "/")
	}
	hops := 0
	var follow func(target string) bool
	follow = func(target string) bool {
		if path.IsAbs(target) {
			return true
		}
		for _, c := range strings.Split(target, "/") {
			switch c {
			case "", ".":
				continue
			case "..":
				if len(at) == 0 {
					return true
				}
				at = at[:len(at)-1]
				continue
			}
			next, err := w.root.Readlink(strings.Join(append(at, c), "/"))
			if err != nil { // a directory, a file or nothing: step into it
				at = append(at, c)
				continue
			}
			if hops++; hops > maxLinkHops {
				return false
			}
			if follow(next) {
				return true
			}
		}
		return false
	}
	return follow(target)
}
