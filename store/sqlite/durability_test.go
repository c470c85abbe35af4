package sqlite_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/sqlite"
)

const (
	childEnv     = "SQLITEKV_TEST_CHILD_DB"
	childSyncEnv = "SQLITEKV_TEST_CHILD_SYNC"
	childWorkers = 4
)

func seqPath(dir string, n int) string { return fmt.Sprintf("/%s/%08d", dir, n) }

// runChild is the body of the re-executed test binary: it commits batches
// of two ops from several goroutines forever and prints the sequence number
// of every acknowledged Commit.
func runChild(path string) int {
	opts := sqlite.Options{}
	if os.Getenv(childSyncEnv) == "normal" {
		opts.Sync = sqlite.SyncNormal
	}
	s, err := sqlite.Open(context.Background(), path, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var mu sync.Mutex
	next := 0
	for w := 0; w < childWorkers; w++ {
		go func() {
			for {
				mu.Lock()
				n := next
				next++
				mu.Unlock()
				err := s.Commit(context.Background(),
					store.Create(seqPath("a", n), []byte(strconv.Itoa(n))),
					store.Put(seqPath("b", n), []byte(strconv.Itoa(n))))
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				fmt.Println(n) // one write(2) per ack: no user-space buffer to lose
			}
		}()
	}
	select {}
}

// TestKill9Durability kills a writing child with SIGKILL after it has
// acknowledged acks Commits, then checks that every acknowledged Commit is
// present and that no batch is half there.
func TestKill9Durability(t *testing.T) {
	for _, mode := range []string{"full", "normal"} { // both survive a killed process
		t.Run(mode, func(t *testing.T) { kill9Durability(t, mode) })
	}
}

func kill9Durability(t *testing.T, mode string) {
	const acks = 300
	path := filepath.Join(t.TempDir(), "state.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+path, childSyncEnv+"="+mode)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[int]bool{}
	sc := bufio.NewScanner(out)
	for len(acked) < acks && sc.Scan() {
		n, err := strconv.Atoi(sc.Text())
		if err != nil {
			t.Fatalf("child printed %q", sc.Text())
		}
		acked[n] = true
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	for sc.Scan() { // acks printed before the kill landed count too
		if n, err := strconv.Atoi(sc.Text()); err == nil {
			acked[n] = true
		}
	}
	_ = cmd.Wait()
	if len(acked) < acks {
		t.Fatalf("child stopped after %d acks", len(acked))
	}
	verifyAfterCrash(t, path, acked)
}

func verifyAfterCrash(t *testing.T, path string, acked map[int]bool) {
	s := open(t, path, sqlite.Options{})
	as, err := s.Children(t.Context(), "/a")
	if err != nil {
		t.Fatal(err)
	}
	bs, err := s.Children(t.Context(), "/b")
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != len(bs) {
		t.Fatalf("partial batches: %d /a nodes but %d /b nodes", len(as), len(bs))
	}
	present := map[int]bool{}
	for i, name := range as {
		if bs[i] != name {
			t.Fatalf("partial batch: /a/%s without /b/%s", name, bs[i])
		}
		n, _ := strconv.Atoi(name)
		present[n] = true
	}
	for n := range acked {
		if !present[n] {
			t.Fatalf("acknowledged commit %d lost (%d acked, %d present)", n, len(acked), len(present))
		}
	}
	t.Logf("%d commits acknowledged, %d present after SIGKILL", len(acked), len(present))
}
