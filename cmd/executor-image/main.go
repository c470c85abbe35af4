// Command executor-image writes the executor's container image as a docker-archive (make
// image: dist/elasticjob-executor-image.tar), importable with `ctr images import` and
// pushable with skopeo or crane; see docs/kubernetes.md.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/ejcloud/elasticjob/engine/kube/image"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "executor-image:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("executor-image", flag.ContinueOnError)
	ref := fs.String("ref", "localhost/elasticjob-executor:latest", "image reference (the tag ctr imports it as)")
	exe := fs.String("executor", "dist/elasticjob-executor", "the static executor binary (CGO_ENABLED=0)")
	sched := fs.String("scheduler", "", "the static scheduler binary, put into the image at /elasticjob-scheduler (empty: none)")
	bb := fs.String("busybox", "/bin/busybox", `a static busybox for the image's /bin/sh and tools (Debian: busybox-static); "none" leaves the shell out`)
	ca := fs.String("ca-certs", "/etc/ssl/certs/ca-certificates.crt", `CA bundle for https app URLs; "none" leaves it out`)
	out := fs.String("o", "dist/elasticjob-executor-image.tar", "output file")
	jre := fs.String("jre", "", "a Debian JRE package (openjdk-17-jre-headless) whose files, and the libraries they link, go into the image: an app image for Java jobs (make java-image)")
	javaJar := fs.String("java-jar", "", "the Java library (dist/elasticjob-cloud-executor.jar), put at "+image.JavaJarPath)
	if err := fs.Parse(args); err != nil {
		return err
	}
	s := image.Spec{Ref: *ref, Executor: *exe, Scheduler: *sched, JavaJar: *javaJar}
	if *jre != "" {
		paths, home, err := jreFiles(*jre)
		if err != nil {
			return err
		}
		s.Paths, s.Title = paths, "elasticjob-jre"
		s.Env = []string{"JAVA_HOME=" + home, "PATH=/bin:/usr/bin:/sbin:/usr/sbin:" + home + "/bin"}
	}
	if *bb != "none" {
		list, err := exec.Command(*bb, "--list").Output()
		if err != nil {
			return fmt.Errorf("%s --list: %v (install Debian's busybox-static, or pass -busybox none for an image without a shell)", *bb, err)
		}
		s.Busybox, s.Applets = *bb, strings.Fields(string(list))
	}
	if *ca != "none" {
		if _, err := os.Stat(*ca); err == nil {
			s.CACerts = *ca
		}
	}
	f, err := os.Create(*out + ".tmp")
	if err != nil {
		return err
	}
	if err := image.Write(f, s); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(*out+".tmp", *out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%s); import: ctr -n k8s.io images import %s\n", *out, *ref, *out)
	return nil
}

// jreFiles lists a Debian JRE package's files (not its docs) and the shared libraries its
// programs and libraries link (ldd), and returns its JAVA_HOME.
func jreFiles(pkg string) (paths []string, home string, err error) {
	list, err := exec.Command("dpkg", "-L", pkg).Output()
	if err != nil {
		return nil, "", fmt.Errorf("dpkg -L %s: %v (apt-get install %s)", pkg, err, pkg)
	}
	seen := map[string]bool{}
	for _, p := range strings.Fields(string(list)) {
		st, err := os.Lstat(p)
		if err != nil || st.IsDir() || strings.HasPrefix(p, "/usr/share/doc/") || strings.HasPrefix(p, "/usr/share/man/") || strings.Contains(p, "/lintian/") {
			continue
		}
		if _, err := os.Stat(p); err != nil { // a dangling link (docs, src.zip): leave it out
			continue
		}
		seen[p] = true
		if strings.HasSuffix(p, "/bin/java") {
			home = filepath.Dir(filepath.Dir(p))
		}
		if st.Mode().IsRegular() && (strings.HasSuffix(p, ".so") || strings.Contains(p, "/bin/")) {
			libs, err := linked(p)
			if err != nil {
				return nil, "", err
			}
			for _, l := range libs {
				seen[l] = true
			}
		}
	}
	if home == "" {
		return nil, "", fmt.Errorf("%s has no bin/java", pkg)
	}
	for p := range seen {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths, home, nil
}

var lddPath = regexp.MustCompile(`(?m)(?:=> )?(/\S+) \(0x`)

// linked is the shared libraries an ELF file links, by ldd.
func linked(p string) ([]string, error) {
	out, err := exec.Command("ldd", p).Output()
	if err != nil { // not dynamic, or not ELF
		return nil, nil
	}
	var libs []string
	for _, m := range lddPath.FindAllStringSubmatch(string(out), -1) {
		libs = append(libs, m[1])
	}
	return libs, nil
}
