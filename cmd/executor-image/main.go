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
	"strings"

	"github.com/ejcloud/elasticjob/kube/image"
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
	if err := fs.Parse(args); err != nil {
		return err
	}
	s := image.Spec{Ref: *ref, Executor: *exe, Scheduler: *sched}
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
