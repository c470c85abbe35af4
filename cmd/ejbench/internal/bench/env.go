package bench

import (
	"os"
	"path/filepath"
	"strings"
)

// TempDir makes a data directory for one scheduler; removed at the end
// unless -keep.
func TempDir(e Env, name string) (string, func(), error) {
	d, err := os.MkdirTemp("", "ejbench-"+name+"-")
	if err != nil {
		return "", nil, err
	}
	if p, err := filepath.EvalSymlinks(d); err == nil {
		d = p
	}
	return d, func() {
		KillOwnExecutors(e.ExecutorPath, d)
		if e.Keep {
			Logf("kept %s", d)
			return
		}
		_ = os.RemoveAll(d)
	}, nil
}

// Env is what every scenario reads: where the binaries are, whether to keep
// the data directories, and how many registration clients to run.
type Env struct {
	BinDir       string
	Keep         bool
	ExecutorPath string
	Workers      int // concurrent registration clients (register, cluster-sim, ha, kube-scale)
}

// Set reads a comma-separated list into a set.
func Set(list string) map[string]bool {
	m := map[string]bool{}
	for _, s := range strings.Split(list, ",") {
		m[strings.TrimSpace(s)] = true
	}
	return m
}
