package archtest

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// machineDirs are the top directories where one machine keeps its homes and
// work (a build under the shared work directory was the default of three
// tiers); machinePath matches an absolute path into one of them.
var (
	machineDirs = []string{"work", "home", "root", "Users"}
	machinePath = regexp.MustCompile(`(^|[^A-Za-z0-9_.:/-])/(` + strings.Join(machineDirs, "|") + `)/[A-Za-z0-9._-]`)
)

// namesMachineDir reports whether b holds "/DIR/" for a DIR of machineDirs,
// which every match of machinePath holds.
func namesMachineDir(b []byte) bool {
	for _, d := range machineDirs {
		if bytes.Contains(b, []byte("/"+d+"/")) {
			return true
		}
	}
	return false
}

// TestNoMachinePaths: the repository names only paths relative to itself
// (../shared/… beside it) and the EJ_MESOS_HOME / EJ_K8S_HOME settings,
// never where one machine keeps a build. Every text file of the tree is
// read (what git ignores, node_modules and build output aside).
func TestNoMachinePaths(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("%s is not the module root: %v", root, err)
	}
	skip := map[string]bool{".git": true, "node_modules": true, "bin": true, "dist": true, "data": true, "artifacts": true, "testdata": true}
	read := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if skip[d.Name()] && rel != "web/dist" {
				return filepath.SkipDir
			}
			return nil
		}
		if !textFile(d.Name()) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		read++
		// Every match holds one of these: a file without any (nearly all) needs no
		// regular expression over each of its lines, which under the race detector
		// made this the package's longest test.
		if !namesMachineDir(b) {
			return nil
		}
		for i, line := range strings.Split(string(b), "\n") {
			if loc := machinePath.FindStringIndex(line); loc != nil {
				t.Errorf("%s:%d names a path of one machine: %s", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if read < 100 {
		t.Fatalf("only %d files read: the walk is broken", read)
	}
}

func textFile(name string) bool {
	switch filepath.Ext(name) {
	case ".go", ".sh", ".md", ".js", ".html", ".css", ".yaml", ".yml", ".json", ".txt", ".properties", ".java", ".sql", ".toml":
		return true
	}
	return name == "Makefile" || name == "Dockerfile"
}
