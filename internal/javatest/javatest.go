// Package javatest gives tests a real JVM: the Java library (sdk/java) built
// from the current sources, and test apps compiled against it, each built
// once per machine and content (cached under the temp directory, shared by
// the test packages that run at the same time) so that the Java tiers add
// seconds, not minutes. Without a JDK the tests skip, or fail under CI
// (scripts/test.sh installs openjdk-17-jdk-headless).
package javatest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Need skips t (fails it under CI) when there is no JDK.
func Need(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"java", "javac", "jar"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed: scripts/services.sh install puts in openjdk-17-jdk-headless", tool)
			}
			t.Skipf("%s is not installed (apt-get install openjdk-17-jdk-headless)", tool)
		}
	}
}

// Root is the repository's root (the directory holding go.mod).
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}

// Jar is the Java library built from sdk/java as it is now ($EJ_JAVA_JAR
// instead, when set).
func Jar(t testing.TB) string {
	t.Helper()
	Need(t)
	if j := os.Getenv("EJ_JAVA_JAR"); j != "" {
		return j
	}
	src := filepath.Join(Root(t), "sdk", "java")
	h := sha256.New()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		fmt.Fprintf(h, "%s %d\n", strings.TrimPrefix(p, src), len(b))
		h.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := cached(t, "lib-"+hex.EncodeToString(h.Sum(nil))[:16], func(out string) error {
		return run(src, "bash", filepath.Join(src, "build.sh"), out)
	})
	return filepath.Join(dir, "elasticjob-cloud-executor.jar")
}

// Compile compiles sources (path under the source root → Java text) with
// javac --release 8 against classpath and returns the classes directory.
func Compile(t testing.TB, sources map[string]string, classpath ...string) string {
	t.Helper()
	Need(t)
	names := make([]string, 0, len(sources))
	for k := range sources {
		names = append(names, k)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, k := range names {
		fmt.Fprintf(h, "%s %d\n%s", k, len(sources[k]), sources[k])
	}
	for _, cp := range classpath {
		st, err := os.Stat(cp)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "cp %s %d %d\n", cp, st.Size(), st.ModTime().UnixNano())
	}
	return cached(t, "classes-"+hex.EncodeToString(h.Sum(nil))[:16], func(out string) error {
		srcDir := out + ".src"
		defer os.RemoveAll(srcDir)
		args := []string{"--release", "8", "-Xlint:-options", "-encoding", "UTF-8", "-d", out}
		if len(classpath) > 0 {
			args = append(args, "-cp", strings.Join(classpath, ":"))
		}
		for _, k := range names {
			p := filepath.Join(srcDir, k)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, []byte(sources[k]), 0o644); err != nil {
				return err
			}
			args = append(args, p)
		}
		return run("", "javac", args...)
	})
}

// MakeJar packs dir (classes, resources) into the jar file out, with a
// Main-Class when mainClass is set.
func MakeJar(t testing.TB, dir, out, mainClass string) {
	t.Helper()
	args := []string{"--create", "--date=2026-01-01T00:00:00Z", "--file", out}
	if mainClass != "" {
		args = append(args, "--main-class", mainClass)
	}
	if err := run("", "jar", append(args, "-C", dir, ".")...); err != nil {
		t.Fatal(err)
	}
}

// cached returns the directory build made for key, building it once: a
// build goes to a private directory renamed into place, so concurrent test
// processes never see a half-built one.
func cached(t testing.TB, key string, build func(out string) error) string {
	t.Helper()
	base := filepath.Join(os.TempDir(), fmt.Sprintf("elasticjob-javatest-%d", os.Getuid()))
	dir := filepath.Join(base, key)
	if _, err := os.Stat(dir); err == nil {
		return dir
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(base, ".build-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "out")
	if err := build(out); err != nil {
		t.Fatalf("build %s: %v", key, err)
	}
	if err := os.Rename(out, dir); err != nil {
		if _, serr := os.Stat(dir); serr != nil { // not another process's build that got there first
			t.Fatal(err)
		}
	}
	return dir
}

func run(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v\n%s", name, err, out)
	}
	return nil
}
