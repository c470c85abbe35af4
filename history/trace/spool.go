package trace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// The spool is a directory of append-only segment files,
// <seq>.jsonl, one JSON event per line. Every recorded event is appended
// and fsynced (in groups) before the database writer sees it, and a
// segment is deleted once all its events are in the database. A torn last
// line (a crash mid-write) is ignored: it was never reported durable.
// LOCK (flock) keeps a second process out of the directory.
type spool struct {
	dir      string
	lock     *os.File
	maxLines int // lines per segment before it is sealed

	cur      *os.File // segment being appended to (nil before the first write)
	curSeq   uint64
	curLines int
	nextSeq  uint64
}

// segment is a spooled file found at open.
type segment struct {
	seq   uint64
	lines int
}

const segSuffix = ".jsonl"

// ErrSpoolLocked means another process uses the spool directory.
var ErrSpoolLocked = errors.New("trace: spool directory is in use by another process")

func openSpool(dir string, maxLines int) (*spool, []segment, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("trace: spool dir: %w", err)
	}
	lf, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("trace: spool lock: %w", err)
	}
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lf.Close()
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrSpoolLocked, dir, err)
	}
	s := &spool{dir: dir, lock: lf, maxLines: maxLines, nextSeq: 1}
	segs, err := s.scan()
	if err != nil {
		s.close()
		return nil, nil, err
	}
	if n := len(segs); n > 0 {
		s.nextSeq = segs[n-1].seq + 1
	}
	return s, segs, nil
}

// scan lists the segments left by earlier runs, oldest first, with their
// complete lines counted.
func (s *spool) scan() ([]segment, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("trace: read spool: %w", err)
	}
	var segs []segment
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, segSuffix) {
			continue
		}
		seq, err := strconv.ParseUint(strings.TrimSuffix(name, segSuffix), 10, 64)
		if err != nil {
			continue
		}
		n, err := countLines(filepath.Join(s.dir, name))
		if err != nil {
			return nil, err
		}
		if n == 0 {
			_ = os.Remove(filepath.Join(s.dir, name))
			continue
		}
		segs = append(segs, segment{seq: seq, lines: n})
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].seq < segs[j].seq })
	return segs, nil
}

func (s *spool) path(seq uint64) string {
	return filepath.Join(s.dir, fmt.Sprintf("%020d%s", seq, segSuffix))
}

func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("trace: spool: %w", err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	n := 0
	for {
		k, err := f.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return 0, fmt.Errorf("trace: spool: %w", err)
		}
	}
}

// placed says where appended lines went: lines [start, start+n) of
// segment seq; sealed is set when that segment is now full and closed.
type placed struct {
	seq      uint64
	start, n int
	sealed   bool
}

// append writes lines to segments, sealing full ones, and fsyncs. Line i
// is data[ends[i-1]:ends[i]] (from 0 for the first), newline included. On
// error the current segment is sealed (nothing more is appended to a file
// with a possibly partial write) and the error returned; the placements
// returned before the error are durable.
func (s *spool) append(data []byte, ends []int) ([]placed, error) {
	var out []placed
	from := 0 // the first line not written
	for from < len(ends) {
		if s.cur == nil {
			f, err := os.OpenFile(s.path(s.nextSeq), os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_EXCL, 0o600)
			if err != nil {
				return out, fmt.Errorf("trace: spool: %w", err)
			}
			if err := syncDir(s.dir); err != nil {
				f.Close()
				return out, err
			}
			s.cur, s.curSeq, s.curLines = f, s.nextSeq, 0
			s.nextSeq++
		}
		k := min(len(ends)-from, s.maxLines-s.curLines)
		start := 0
		if from > 0 {
			start = ends[from-1]
		}
		_, err := s.cur.Write(data[start:ends[from+k-1]])
		if err == nil {
			err = s.cur.Sync()
		}
		if err != nil {
			seq := s.curSeq
			s.cur.Close()
			s.cur = nil
			return append(out, placed{seq: seq, sealed: true}), fmt.Errorf("trace: spool write: %w", err)
		}
		p := placed{seq: s.curSeq, start: s.curLines, n: k}
		s.curLines += k
		if s.curLines >= s.maxLines {
			s.cur.Close()
			s.cur = nil
			p.sealed = true
		}
		out = append(out, p)
		from += k
	}
	return out, nil
}

// read returns lines [start, start+n) of a segment, decoded; bad lines
// are returned as errors in bad (and skipped).
func (s *spool) read(seq uint64, start, n int) (evs []Event, bad []error, err error) {
	f, err := os.Open(s.path(seq))
	if err != nil {
		return nil, nil, fmt.Errorf("trace: spool: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 256<<10)
	for i := 0; i < start+n; i++ {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			break // torn tail or short file: what is there is all there is
		}
		if err != nil {
			return nil, nil, fmt.Errorf("trace: spool read: %w", err)
		}
		if i < start {
			continue
		}
		ev, derr := decodeEvent(line[:len(line)-1])
		if derr != nil {
			bad = append(bad, fmt.Errorf("segment %d line %d: %w", seq, i+1, derr))
			continue
		}
		evs = append(evs, ev)
	}
	return evs, bad, nil
}

// remove deletes a segment whose events are all in the database.
func (s *spool) remove(seq uint64) error {
	if err := os.Remove(s.path(seq)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("trace: spool: %w", err)
	}
	return nil
}

// closeCurrent closes the segment being written; removeCurrent also
// deletes it (when everything in it is in the database).
func (s *spool) closeCurrent(remove bool) {
	if s.cur == nil {
		return
	}
	s.cur.Close()
	s.cur = nil
	if remove {
		_ = s.remove(s.curSeq)
	}
}

func (s *spool) close() {
	s.closeCurrent(false)
	if s.lock != nil {
		_ = syscall.Flock(int(s.lock.Fd()), syscall.LOCK_UN)
		s.lock.Close()
		s.lock = nil
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("trace: spool: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("trace: spool fsync dir: %w", err)
	}
	return nil
}
