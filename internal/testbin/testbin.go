// Package testbin gives the tests that start the project's programs their binaries. Under
// make test they are the ones `make build` made (scripts/test.sh sets EJ_BIN to bin/ once
// it has built them), so that one make test compiles the tree once and no test compiles
// under a deadline of its own (a loaded machine once killed a test's own go build at its
// deadline). Outside make test they are built once per test binary, as make build builds
// them, with no deadline.
package testbin

import (
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// Env names the directory of binaries make build made; scripts/test.sh sets it.
const Env = "EJ_BIN"

// Commands puts the commands ./cmd/NAME of the module at moduleRoot into dir and returns
// dir: linked (or copied) from EJ_BIN when it is set (each must be there: a missing one is an
// error naming make build, never a silent rebuild), else built now. The tests own dir (they
// put the Java library beside the executor, open its parents to the tenants' users), never
// bin/ itself.
func Commands(moduleRoot, dir string, names ...string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	made := os.Getenv(Env)
	for _, name := range names {
		var err error
		if made != "" {
			err = install(filepath.Join(made, name), filepath.Join(dir, name))
		} else {
			err = build(moduleRoot, filepath.Join(dir, name), "./cmd/"+name)
		}
		if err != nil {
			return "", err
		}
	}
	return dir, nil
}

// install hard-links src at dst, or copies it where they are on different file systems.
func install(src, dst string) error {
	st, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("%s=%s has no %s: run make build first", Env, filepath.Dir(src), filepath.Base(src))
	}
	// A dst left from an earlier run may be a link to src: truncating it would truncate src.
	if err := os.Remove(dst); err != nil && !os.IsNotExist(err) {
		return err
	}
	if os.Link(src, dst) == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, st.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// GoApp returns examples/go-app packed as make build packs it (examples/dist/go-app.tar.gz):
// that file under EJ_BIN, else one built into dir now.
func GoApp(moduleRoot, dir string) (string, error) {
	if os.Getenv(Env) != "" {
		p, err := filepath.Abs(filepath.Join(moduleRoot, "examples", "dist", "go-app.tar.gz"))
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("no %s: run make build first", p)
		}
		return p, nil
	}
	pkg := filepath.Join(dir, "pkg")
	if err := build(moduleRoot, filepath.Join(pkg, "bin", "go-app"), "./examples/go-app"); err != nil {
		return "", err
	}
	tgz := filepath.Join(dir, "go-app.tar.gz")
	if out, err := exec.Command("tar", "-czf", tgz, "-C", pkg, ".").CombinedOutput(); err != nil {
		return "", fmt.Errorf("tar go-app: %v\n%s", err, out)
	}
	return tgz, nil
}

// build builds pkg into out as make build does: static (CGO_ENABLED=0), so the same
// binaries serve the processes the tests start and the Kubernetes tier's image.
func build(moduleRoot, out, pkg string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = moduleRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return nil
}

// Static reports an error when the binary at path is linked dynamically (an image without
// a libc cannot run it): a bin/ made before make build built static binaries.
func Static(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is linked dynamically: run make build (it builds static binaries)", path)
		}
	}
	return nil
}
