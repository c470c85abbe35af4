package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/ejcloud/elasticjob/store"
)

// A linearizability check of a store: clients read, write and write
// conditionally (on the version they read) a few keys concurrently, each
// operation recorded with when it was called and when it returned, and
// porcupine (github.com/anishathalye/porcupine) decides whether some
// order of them, each placed between its call and its return, is a
// sequential history of one register per key. Every value written is
// unique, so a version that changed is a value that changed. An operation
// that failed with an unknown outcome (a lost connection, a timeout: it
// may have been applied, later or never) is recorded as returning at
// the end of time; a read that failed tells nothing and is left out.

// linInput is one operation: a read, a write (Put), or a conditional
// write from the value read (Set on its version, or Create when absent).
type linInput struct {
	kind     byte // 'r', 'w', 'c'
	key      string
	from, to string // from: the value read ("" absent); to: the value written
}

// linOutput is what the operation answered.
type linOutput struct {
	value   string // a read's value ("" absent)
	ok      bool   // a conditional write applied
	unknown bool   // a write's outcome is unknown
}

// linModel is one register per key.
var linModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			k := op.Input.(linInput).key
			if _, ok := by[k]; !ok {
				keys = append(keys, k)
			}
			by[k] = append(by[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, by[k])
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(string), input.(linInput), output.(linOutput)
		switch in.kind {
		case 'r':
			return out.value == s, s
		case 'w':
			return true, in.to
		default: // 'c'
			switch {
			case out.unknown: // applied here if it could be (else it never was)
				if s == in.from {
					return true, in.to
				}
				return true, s
			case out.ok:
				return s == in.from, in.to
			default:
				return s != in.from, s
			}
		}
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(linInput), output.(linOutput)
		switch {
		case in.kind == 'r':
			return fmt.Sprintf("get(%s) -> %q", in.key, out.value)
		case in.kind == 'w':
			return fmt.Sprintf("put(%s, %q) unknown=%v", in.key, in.to, out.unknown)
		default:
			return fmt.Sprintf("cas(%s, %q -> %q) ok=%v unknown=%v", in.key, in.from, in.to, out.ok, out.unknown)
		}
	},
}

// History records the operations of concurrent clients of a store (Drive)
// for a linearizability check (Check).
type History struct {
	mu      sync.Mutex
	ops     []porcupine.Operation
	start   time.Time
	keys    []string
	waiters map[int]chan struct{}
}

// NewHistory is an empty history over keys paths under prefix.
func NewHistory(prefix string, keys int) *History {
	h := &History{start: time.Now()}
	for i := range keys {
		h.keys = append(h.keys, fmt.Sprintf("%s/k%d", prefix, i))
	}
	return h
}

// forever is the return time of an operation whose outcome is unknown.
const forever = int64(1) << 62

func (h *History) now() int64 { return time.Since(h.start).Nanoseconds() }

func (h *History) add(client int, in linInput, out linOutput, call, ret int64) {
	if out.unknown {
		ret = forever
	}
	h.mu.Lock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret})
	if ch, ok := h.waiters[len(h.ops)]; ok {
		close(ch)
		delete(h.waiters, len(h.ops))
	}
	h.mu.Unlock()
}

// When returns a channel closed once n operations have been recorded (a
// fault injected in the middle of the clients' work).
func (h *History) When(n int) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := make(chan struct{})
	if len(h.ops) >= n {
		close(ch)
		return ch
	}
	if h.waiters == nil {
		h.waiters = map[int]chan struct{}{}
	}
	if old, ok := h.waiters[n]; ok {
		return old
	}
	h.waiters[n] = ch
	return ch
}

// Len is how many operations were recorded.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ops)
}

// Drive runs client's operations on kv until ctx ends or it has made ops
// of them, each bounded by opTimeout. seed draws the operations.
func (h *History) Drive(ctx context.Context, kv store.KV, client, ops int, opTimeout time.Duration, seed uint64) {
	rnd := rand.New(rand.NewPCG(seed, uint64(client)))
	for n := 0; n < ops && ctx.Err() == nil; n++ {
		key := h.keys[rnd.IntN(len(h.keys))]
		value := fmt.Sprintf("c%d-%d", client, n)
		octx, cancel := context.WithTimeout(ctx, opTimeout)
		switch r := rnd.IntN(10); {
		case r < 4:
			h.read(octx, kv, client, key)
		case r < 6:
			call := h.now()
			err := kv.Commit(octx, store.Put(key, []byte(value)))
			h.add(client, linInput{kind: 'w', key: key, to: value}, linOutput{unknown: err != nil}, call, h.now())
		default:
			h.cas(octx, kv, client, key, value)
		}
		cancel()
	}
}

func (h *History) read(ctx context.Context, kv store.KV, client int, key string) {
	call := h.now()
	n, err := kv.Get(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		h.add(client, linInput{kind: 'r', key: key}, linOutput{}, call, h.now())
	case err == nil:
		h.add(client, linInput{kind: 'r', key: key}, linOutput{value: string(n.Value)}, call, h.now())
	}
}

func (h *History) cas(ctx context.Context, kv store.KV, client int, key, value string) {
	n, err := kv.Get(ctx, key)
	var op store.Op
	from := ""
	switch {
	case errors.Is(err, store.ErrNotFound):
		op = store.Create(key, []byte(value))
	case err == nil:
		from = string(n.Value)
		op = store.Set(key, []byte(value), n.Version)
	default:
		return // nothing was tried
	}
	call := h.now()
	err = kv.Commit(ctx, op)
	out := linOutput{ok: err == nil}
	if err != nil && !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrExists) && !errors.Is(err, store.ErrNotFound) {
		out.unknown = true
	}
	h.add(client, linInput{kind: 'c', key: key, from: from, to: value}, out, call, h.now())
}

// Summary counts the operations by kind and outcome.
func (h *History) Summary() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var reads, writes, casOK, casFailed, unknown int
	for _, op := range h.ops {
		in, out := op.Input.(linInput), op.Output.(linOutput)
		switch {
		case out.unknown:
			unknown++
		case in.kind == 'r':
			reads++
		case in.kind == 'w':
			writes++
		case out.ok:
			casOK++
		default:
			casFailed++
		}
	}
	return fmt.Sprintf("%d operations: %d reads, %d writes, %d conditional writes applied, %d refused, %d of unknown outcome",
		len(h.ops), reads, writes, casOK, casFailed, unknown)
}

// Check fails t unless the history is linearizable. A check that cannot
// decide within its bound is reported, not failed.
func (h *History) Check(t testing.TB) {
	t.Helper()
	h.mu.Lock()
	ops := append([]porcupine.Operation(nil), h.ops...)
	h.mu.Unlock()
	t.Log(h.Summary())
	res, info := porcupine.CheckOperationsVerbose(linModel, ops, time.Minute)
	switch res {
	case porcupine.Ok:
	case porcupine.Unknown:
		t.Logf("linearizability of %d operations: undecided within the bound", len(ops))
	default:
		t.Errorf("the store's history of %d operations is not linearizable; the longest orders found:\n%s", len(ops), describeLin(info))
	}
}

// describeLin prints the longest partial linearization of each key that
// failed (the operations it could order, then the first it could not).
func describeLin(info porcupine.LinearizationInfo) string {
	var out string
	for i, part := range info.PartialLinearizationsOperations() {
		longest := []porcupine.Operation(nil)
		for _, l := range part {
			if len(l) > len(longest) {
				longest = l
			}
		}
		out += fmt.Sprintf("partition %d: %d operations ordered; the last ones:\n", i, len(longest))
		for _, op := range longest[max(len(longest)-8, 0):] {
			out += "  " + linModel.DescribeOperation(op.Input, op.Output) + "\n"
		}
	}
	return out
}

// linearizable: four clients of one store, no faults.
func (s suite) linearizable(t *testing.T, kv store.KV) {
	h := NewHistory("/lin", 3)
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Go(func() { h.Drive(t.Context(), kv, c, s.opts.LinearOps, 10*time.Second, 1) })
	}
	wg.Wait()
	h.Check(t)
}
