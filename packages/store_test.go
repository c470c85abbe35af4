package packages

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store/memory"
)

func sumOf(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

func TestStoreReceiveCommitAndLimits(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	s, err := NewStore(dir, 10, clk)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Receive(t.Context(), strings.NewReader("0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	if p.SHA256() != sumOf([]byte("0123456789")) || p.Size() != 10 {
		t.Fatalf("pending = %s %d", p.SHA256(), p.Size())
	}
	if _, err := p.Commit(sumOf([]byte("other"))); !errors.Is(err, ErrChecksum) {
		t.Fatalf("commit with a wrong sum = %v, want ErrChecksum", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("a refused commit left %v", ents)
	}
	if _, err := s.Receive(t.Context(), strings.NewReader("0123456789A")); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("11 bytes over a 10-byte limit = %v, want ErrTooLarge", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("a refused receive left %v", ents)
	}
	p, _ = s.Receive(t.Context(), strings.NewReader("0123456789"))
	info, err := p.Commit(p.SHA256())
	if err != nil {
		t.Fatal(err)
	}
	if !info.ModTime.Equal(clk.Now()) || !s.Has(info.SHA256) {
		t.Fatalf("info = %+v", info)
	}
	f, got, err := s.Open(info.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got.Size != 10 || !got.ModTime.Equal(clk.Now()) {
		t.Fatalf("open = %+v", got)
	}
	// The same content again: the file stays, its time moves on (GC counts from it).
	clk.Advance(time.Hour)
	p, _ = s.Receive(t.Context(), strings.NewReader("0123456789"))
	if info, err = p.Commit(""); err != nil || !info.ModTime.Equal(clk.Now()) {
		t.Fatalf("re-commit = %+v, %v", info, err)
	}
	if list, _ := s.List(); len(list) != 1 || !list[0].ModTime.Equal(clk.Now()) {
		t.Fatalf("list = %+v", list)
	}
	if _, _, err := s.Open(strings.Repeat("a", 64)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("open of a missing package = %v", err)
	}
	if _, _, err := s.Open("../x"); !errors.Is(err, ErrBadHash) {
		t.Fatalf("open of a bad name = %v", err)
	}
}

func TestCleanName(t *testing.T) {
	for in, want := range map[string]string{
		"demo-app.tar.gz": "demo-app.tar.gz", "../../etc/passwd": "passwd", `C:\build\app.zip`: "app.zip",
		"my app (1).tgz": "my_app__1_.tgz", "": DefaultName, "..": DefaultName, "dir/": DefaultName,
		"ünï.tgz": "__n__.tgz", strings.Repeat("a", 200) + ".tgz": strings.Repeat("a", 124) + ".tgz",
	} {
		if got := CleanName(in); got != want {
			t.Errorf("CleanName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLinksParseAndResolve(t *testing.T) {
	a := NewLinks([]byte("key-one-key-one-"), "http://sched-1:8899/")
	b := NewLinks([]byte("key-one-key-one-"), "https://sched-2.example/ej")
	other := NewLinks([]byte("key-two-key-two-"), "http://sched-1:8899")
	sha := sumOf([]byte("pkg"))
	u := a.URL(sha, "app.tgz")
	if want := "http://sched-1:8899/packages/" + sha + "/" + a.Token(sha) + "/app.tgz"; u != want {
		t.Fatalf("URL = %s, want %s", u, want)
	}
	if ref, ok := b.Parse(u); !ok || ref.SHA256 != sha || ref.Name != "app.tgz" {
		t.Fatalf("Parse by a peer = %+v %v", ref, ok)
	}
	if got, want := b.Resolve(u), "https://sched-2.example/ej/packages/"+sha+"/"+a.Token(sha)+"/app.tgz"; got != want {
		t.Fatalf("Resolve = %s, want %s", got, want)
	}
	for _, raw := range []string{
		"http://files.example/app.tgz",
		"http://files.example/packages/" + sha + "/" + strings.Repeat("0", 32) + "/app.tgz", // not our token
		"file:///packages/" + sha + "/" + a.Token(sha) + "/app.tgz",
		"http://sched-1:8899/packages/" + sha + "/app.tgz",
	} {
		if _, ok := a.Parse(raw); ok {
			t.Errorf("Parse(%s) accepted", raw)
		}
		if got := a.Resolve(raw); got != raw {
			t.Errorf("Resolve(%s) = %s, want it unchanged", raw, got)
		}
	}
	if _, ok := other.Parse(u); ok {
		t.Fatal("a registry with another key accepted the URL")
	}
}

func TestLoadKeyIsSharedByInstances(t *testing.T) {
	kv := memory.New()
	keys := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := LoadKey(t.Context(), registry.New(kv).Term().PackageKey())
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if !bytes.Equal(k, keys[0]) || len(k) != 32 {
			t.Fatalf("instances got different keys: %x vs %x", k, keys[0])
		}
	}
	corrupt := registry.New(memory.New()).Term().PackageKey()
	if _, err := corrupt.Create(t.Context(), []byte("zz")); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKey(t.Context(), corrupt); err == nil || !strings.Contains(err.Error(), "no valid key") {
		t.Fatalf("a corrupt key = %v", err)
	}
}

func TestStoreIgnoresForeignFiles(t *testing.T) {
	dir := t.TempDir()
	s, err := NewStore(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.MaxBytes() != DefaultMaxBytes {
		t.Fatalf("default limit = %d", s.MaxBytes())
	}
	os.WriteFile(filepath.Join(dir, "README"), []byte("x"), 0o644)
	os.Mkdir(filepath.Join(dir, strings.Repeat("b", 64)), 0o755)
	if list, err := s.List(); err != nil || len(list) != 0 {
		t.Fatalf("list = %v, %v", list, err)
	}
}

// TestPendingFormat: what an upload received is told by its first bytes,
// whatever its size or the chunks it arrived in; a text file or random
// bytes is ErrNotPackage (the API answers 400 and stores nothing).
func TestPendingFormat(t *testing.T) {
	s, err := NewStore(t.TempDir(), 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	tarBlock := make([]byte, 1024)
	copy(tarBlock[257:], "ustar")
	cases := []struct {
		body []byte
		want app.PackageFormat
		err  bool
	}{
		{[]byte("#!/bin/sh\necho hi\n"), app.FormatScript, false},
		{append([]byte{0x1f, 0x8b}, bytes.Repeat([]byte{7}, 100_000)...), app.FormatGzip, false},
		{tarBlock, app.FormatTar, false},
		{[]byte("just some notes\n"), app.FormatUnknown, true},
		{bytes.Repeat([]byte("`\xff\x00"), 700), app.FormatUnknown, true},
	}
	for _, c := range cases {
		p, err := s.Receive(t.Context(), iotest.OneByteReader(bytes.NewReader(c.body)))
		if err != nil {
			t.Fatal(err)
		}
		f, err := p.Format()
		if f != c.want || errors.Is(err, app.ErrNotPackage) != c.err || (err != nil) != c.err {
			t.Errorf("%q…: %v %v", c.body[:min(len(c.body), 8)], f, err)
		}
		p.Discard()
	}
}
