package clustersim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	"github.com/go-zookeeper/zk"
)

// zkStat is what ZooKeeper's srvr four-letter word tells: the last zxid
// (its low 32 bits count the write transactions of the epoch) and the
// number of znodes.
type zkStat struct {
	zxid  int64
	nodes int64
}

var (
	zxidLine  = regexp.MustCompile(`(?m)^Zxid: 0x([0-9a-fA-F]+)`)
	nodesLine = regexp.MustCompile(`(?m)^Node count: (\d+)`)
)

// readZKStat asks the first server of servers for srvr.
func readZKStat(servers string) (zkStat, error) {
	addr, _, _ := strings.Cut(servers, ",")
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return zkStat{}, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("srvr")); err != nil {
		return zkStat{}, err
	}
	b, err := io.ReadAll(c)
	if err != nil {
		return zkStat{}, err
	}
	z, n := zxidLine.FindSubmatch(b), nodesLine.FindSubmatch(b)
	if z == nil || n == nil {
		return zkStat{}, fmt.Errorf("srvr from %s: unexpected answer %q (is srvr in 4lw.commands.whitelist?)", addr, bench.FirstLine(string(b)))
	}
	var st zkStat
	zx, _ := strconv.ParseUint(string(z[1]), 16, 64)
	st.zxid = int64(zx & 0xffffffff) // the epoch's counter
	st.nodes, _ = strconv.ParseInt(string(n[1]), 10, 64)
	return st, nil
}

// zkRate is ZooKeeper's own write rate with the scheduler's client library.
type zkRate struct {
	seqTxnPerSec float64       // one writer, one op at a time (round-trip bound)
	seqLatency   time.Duration // its mean
	parTxnPerSec float64       // `workers` writers on one session, one op per request
	multiTxns    float64       // `workers` writers, multi of multiOps ops per request: txns/s
	multiOps     float64       // … and the ops/s they carry
}

const (
	zkRateWorkers  = 32
	zkRateMultiOps = 10
	zkRateValue    = 300 // bytes, about a running entry
)

// measureZKRate writes under root for about 3 × per, with the op mix of a
// launch (create a running entry, set it, delete it), and removes what it
// wrote.
func measureZKRate(ctx context.Context, servers, root string, per time.Duration) (zkRate, error) {
	conn, _, err := zk.Connect(strings.Split(servers, ","), 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		return zkRate{}, err
	}
	defer conn.Close()
	acl := zk.WorldACL(zk.PermAll)
	if _, err := conn.Create(root, nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return zkRate{}, fmt.Errorf("create %s: %w", root, err)
	}
	defer func() { _ = deleteTree(context.Background(), conn, root, time.Minute) }()
	val := make([]byte, zkRateValue)
	var r zkRate
	// One writer: create, set, delete one node at a time.
	n, took, err := zkLoop(ctx, 1, per, func(w, i int) (int, error) { return 3, zkCycle(conn, fmt.Sprintf("%s/s-%d", root, i), val, acl) })
	if err != nil {
		return r, err
	}
	r.seqTxnPerSec = float64(n) / took.Seconds()
	r.seqLatency = time.Duration(float64(took) / float64(max(n, 1)))
	// Many writers on the one session (the scheduler's shape: one client).
	n, took, err = zkLoop(ctx, zkRateWorkers, per, func(w, i int) (int, error) {
		return 3, zkCycle(conn, fmt.Sprintf("%s/p-%d-%d", root, w, i), val, acl)
	})
	if err != nil {
		return r, err
	}
	r.parTxnPerSec = float64(n) / took.Seconds()
	// Many writers, each request a multi of zkRateMultiOps ops.
	n, took, err = zkLoop(ctx, zkRateWorkers, per, func(w, i int) (int, error) {
		return 3, zkMultiCycle(conn, fmt.Sprintf("%s/m-%d-%d", root, w, i), val, acl)
	})
	if err != nil {
		return r, err
	}
	r.multiTxns = float64(n) / took.Seconds()
	r.multiOps = r.multiTxns * zkRateMultiOps
	return r, nil
}

// zkLoop runs f on workers goroutines for d and returns the transactions
// they counted and the time taken.
func zkLoop(ctx context.Context, workers int, d time.Duration, f func(w, i int) (int, error)) (int, time.Duration, error) {
	var total atomic.Int64
	var firstErr error
	var once sync.Once
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 0; time.Now().Before(end) && ctx.Err() == nil; i++ {
				n, err := f(w, i)
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				total.Add(int64(n))
			}
		})
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return int(total.Load()), time.Since(start), firstErr
}

func zkCycle(conn *zk.Conn, path string, val []byte, acl []zk.ACL) error {
	if _, err := conn.Create(path, val, 0, acl); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if _, err := conn.Set(path, val, -1); err != nil {
		return fmt.Errorf("set %s: %w", path, err)
	}
	if err := conn.Delete(path, -1); err != nil {
		return fmt.Errorf("delete %s: %w", path, err)
	}
	return nil
}

func zkMultiCycle(conn *zk.Conn, prefix string, val []byte, acl []zk.ACL) error {
	var creates, sets, deletes []any
	for k := range zkRateMultiOps {
		p := fmt.Sprintf("%s-%d", prefix, k)
		creates = append(creates, &zk.CreateRequest{Path: p, Data: val, Acl: acl})
		sets = append(sets, &zk.SetDataRequest{Path: p, Data: val, Version: -1})
		deletes = append(deletes, &zk.DeleteRequest{Path: p, Version: -1})
	}
	for _, ops := range [][]any{creates, sets, deletes} {
		if _, err := conn.Multi(ops...); err != nil {
			return fmt.Errorf("multi under %s: %w", prefix, err)
		}
	}
	return nil
}

// deleteTree removes root and everything below it: the tree is listed
// with concurrent requests on the one session, then deleted deepest first
// in multis of up to 500 nodes. It gives up after timeout.
func deleteTree(ctx context.Context, conn *zk.Conn, root string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	levels, err := listTree(ctx, conn, root)
	if err != nil {
		return err
	}
	for d := len(levels) - 1; d >= 0; d-- {
		batches := slices.Collect(slices.Chunk(levels[d], 500))
		errs := make(chan error, len(batches))
		parallel(8, len(batches), func(i int) {
			ops := make([]any, len(batches[i]))
			for k, p := range batches[i] {
				ops[k] = &zk.DeleteRequest{Path: p, Version: -1}
			}
			if _, err := conn.Multi(ops...); err != nil && !errors.Is(err, zk.ErrNoNode) {
				errs <- err
			}
		})
		close(errs)
		if err := <-errs; err != nil {
			return fmt.Errorf("delete under %s: %w", root, err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("delete %s: %w", root, ctx.Err())
		}
	}
	return nil
}

// listTree lists root's subtree by depth (levels[0] = {root}).
func listTree(ctx context.Context, conn *zk.Conn, root string) ([][]string, error) {
	levels := [][]string{{root}}
	for d := 0; len(levels[d]) > 0; d++ {
		var next []string
		var mu sync.Mutex
		var firstErr error
		level := levels[d]
		parallel(64, len(level), func(i int) {
			if ctx.Err() != nil {
				return
			}
			kids, _, err := conn.Children(level[i])
			mu.Lock()
			defer mu.Unlock()
			if err != nil && !errors.Is(err, zk.ErrNoNode) && firstErr == nil {
				firstErr = err
			}
			for _, k := range kids {
				next = append(next, strings.TrimSuffix(level[i], "/")+"/"+k)
			}
		})
		if firstErr == nil {
			firstErr = ctx.Err()
		}
		if firstErr != nil {
			return nil, fmt.Errorf("list %s: %w", root, firstErr)
		}
		levels = append(levels, next)
	}
	return levels[:len(levels)-1], nil
}

// parallel runs f(0..n-1) on workers goroutines.
func parallel(workers, n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(i)
			}
		})
	}
	wg.Wait()
}

// deleteZKNamespace removes a scheduler's namespace (at most two minutes).
func deleteZKNamespace(ctx context.Context, servers, root string) error {
	conn, _, err := zk.Connect(strings.Split(servers, ","), 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		return err
	}
	defer conn.Close()
	return deleteTree(ctx, conn, root, 2*time.Minute)
}
