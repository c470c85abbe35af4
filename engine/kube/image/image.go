// Package image writes the executor's container image as a docker-archive (what
// `ctr images import`, `docker load`, `podman load` and `skopeo copy docker-archive:…` read)
// without a container daemon: one deterministic layer (sorted entries, mtime 0, owner 0)
// holding the static executor (and, optionally, the scheduler), a static busybox with its applets (so apps' bootstrap shell
// scripts run), the CA certificates (https app URLs) and /tmp.
package image

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// Spec is what goes into the image.
type Spec struct {
	Ref      string // image reference, e.g. localhost/elasticjob-executor:latest
	Executor string // the static executor binary (CGO_ENABLED=0)
	// Scheduler, when set, is the static scheduler binary, at /elasticjob-scheduler: one
	// image for the scheduler's Deployment and the task pods (deploy/kubernetes).
	Scheduler string
	Busybox   string // a static busybox ("": no shell in the image)
	Applets   []string
	CACerts   string // a CA bundle ("": none)
	// Paths are host files copied as the host has them (parents, symlink chains): a JRE
	// from a Debian package and the libraries it links (make java-image).
	Paths []string
	// Env is added to the image's environment (JAVA_HOME, a PATH with java on it).
	Env []string
	// JavaJar, when set, is the Java library, put at JavaJarPath.
	JavaJar string
	// Title is the image's title label (default elasticjob-executor).
	Title string
}

// ExecutorPath is the executor in the image.
const ExecutorPath = "/elasticjob-executor"

type entry struct {
	name, link string
	mode       int64
	dir        bool
	data       []byte
}

// Write writes the image to w.
func Write(w io.Writer, s Spec) error {
	entries, err := s.entries()
	if err != nil {
		return err
	}
	layer, err := tarOf(entries)
	if err != nil {
		return err
	}
	diff := sha256.Sum256(layer)
	diffHex := hex.EncodeToString(diff[:])
	cfg, err := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux", "created": time.Unix(0, 0).UTC(),
		"config": map[string]any{
			"Env":        s.env(),
			"Entrypoint": []string{ExecutorPath}, "WorkingDir": "/",
			"Labels": map[string]string{"org.opencontainers.image.title": firstOf(s.Title, "elasticjob-executor")},
		},
		"rootfs":  map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + diffHex}},
		"history": []map[string]any{{"created": time.Unix(0, 0).UTC(), "created_by": "make image (engine/kube/image)"}},
	})
	if err != nil {
		return err
	}
	cfgSum := sha256.Sum256(cfg)
	cfgName := hex.EncodeToString(cfgSum[:]) + ".json"
	manifest, _ := json.Marshal([]map[string]any{{"Config": cfgName, "RepoTags": []string{s.Ref}, "Layers": []string{diffHex + "/layer.tar"}}})
	outer, err := tarOf([]entry{
		{name: cfgName, mode: 0o644, data: cfg},
		{name: diffHex + "/", mode: 0o755, dir: true},
		{name: diffHex + "/layer.tar", mode: 0o644, data: layer},
		{name: "manifest.json", mode: 0o644, data: manifest},
	})
	if err != nil {
		return err
	}
	_, err = w.Write(outer)
	return err
}

// env is the image's environment: the defaults, then Spec.Env (a later PATH wins).
func (s Spec) env() []string {
	out := []string{"PATH=/bin:/usr/bin:/sbin:/usr/sbin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
	for _, kv := range s.Env {
		k, _, _ := strings.Cut(kv, "=")
		for i, o := range out {
			if strings.HasPrefix(o, k+"=") {
				out = append(out[:i], out[i+1:]...)
				break
			}
		}
		out = append(out, kv)
	}
	return out
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (s Spec) entries() ([]entry, error) {
	exe, err := os.ReadFile(s.Executor)
	if err != nil {
		return nil, fmt.Errorf("image: the executor: %w", err)
	}
	out := []entry{
		{name: "elasticjob-executor", mode: 0o755, data: exe},
		{name: "elasticjob/", mode: 0o777, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnogroup:x:65534:\n")},
		{name: "root/", mode: 0o700, dir: true},
	}
	if s.Scheduler != "" {
		b, err := os.ReadFile(s.Scheduler)
		if err != nil {
			return nil, fmt.Errorf("image: the scheduler: %w", err)
		}
		out = append(out, entry{name: "elasticjob-scheduler", mode: 0o755, data: b})
	}
	if s.Busybox != "" {
		bb, err := os.ReadFile(s.Busybox)
		if err != nil {
			return nil, fmt.Errorf("image: busybox: %w", err)
		}
		if !bytes.HasPrefix(bb, []byte("\x7fELF")) {
			return nil, fmt.Errorf("image: %s is not an executable", s.Busybox)
		}
		out = append(out, entry{name: "bin/", mode: 0o755, dir: true}, entry{name: "bin/busybox", mode: 0o755, data: bb},
			entry{name: "usr/", mode: 0o755, dir: true}, entry{name: "usr/bin/", mode: 0o755, dir: true})
		seen := map[string]bool{"busybox": true}
		for _, a := range s.Applets {
			a = strings.TrimSpace(a)
			if a == "" || strings.ContainsAny(a, "/.") || seen[a] {
				continue
			}
			seen[a] = true
			out = append(out, entry{name: "bin/" + a, link: "busybox", mode: 0o777})
		}
		out = append(out, entry{name: "usr/bin/env", link: "../../bin/busybox", mode: 0o777})
	}
	if s.CACerts != "" {
		ca, err := os.ReadFile(s.CACerts)
		if err != nil {
			return nil, fmt.Errorf("image: CA certificates: %w", err)
		}
		out = append(out, entry{name: "etc/ssl/", mode: 0o755, dir: true}, entry{name: "etc/ssl/certs/", mode: 0o755, dir: true},
			entry{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: ca})
	}
	if s.JavaJar != "" {
		jar, err := os.ReadFile(s.JavaJar)
		if err != nil {
			return nil, fmt.Errorf("image: the Java library: %w", err)
		}
		out = append(out, entry{name: "usr/", mode: 0o755, dir: true}, entry{name: "usr/share/", mode: 0o755, dir: true},
			entry{name: "usr/share/elasticjob/", mode: 0o755, dir: true},
			entry{name: strings.TrimPrefix(JavaJarPath, "/"), mode: 0o644, data: jar})
	}
	if len(s.Paths) > 0 {
		h := newHostTree()
		for _, e := range out {
			h.put(e)
		}
		for _, p := range s.Paths {
			if err := h.add(p); err != nil {
				return nil, err
			}
		}
		out = h.list()
	}
	return dedupe(out), nil
}

// dedupe keeps the first entry of each name.
func dedupe(entries []entry) []entry {
	seen := map[string]bool{}
	out := entries[:0]
	for _, e := range entries {
		if !seen[e.name] {
			seen[e.name] = true
			out = append(out, e)
		}
	}
	return out
}

// tarOf writes entries sorted by name, with mtime 0 and owner 0.
func tarOf(entries []entry) ([]byte, error) {
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: time.Unix(0, 0), Format: tar.FormatPAX, Uname: "root", Gname: "root"}
		switch {
		case e.dir:
			h.Typeflag = tar.TypeDir
		case e.link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.link
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(e.data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
