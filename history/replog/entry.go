package replog

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/ejcloud/elasticjob/history/trace"
)

// An entry's value is its events' lines (trace.MarshalEvents) compressed
// with gzip at its fastest level. Every member keeps the entry in its
// raft log in memory (the last etcd_catchup_entries entries, cloned on
// the raft leader), in its WAL and in its database until the entry is
// pruned and compacted: the lines of a history batch, repetitive JSON,
// shrink about eightfold (BenchmarkEntryBytes). An entry written before
// (the lines as they are) is read as it is: a value that does not start
// with gzip's magic bytes is taken for lines.

// gzipMagic starts every gzip stream (RFC 1952); no line starts with it.
var gzipMagic = []byte{0x1f, 0x8b}

// gzipWriters keeps the writers between entries: a flate writer holds
// about a megabyte of state.
var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed) // the level is valid
	return w
}}

// gzipReaders keeps the readers (about 40 KB of state each).
var gzipReaders sync.Pool

// encodeEntry is the stored value of the events' lines.
func encodeEntry(lines []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(lines)/4 + 64)
	w := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(w)
	w.Reset(&buf)
	if _, err := w.Write(lines); err != nil {
		return nil, fmt.Errorf("replog: compress an entry: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("replog: compress an entry: %w", err)
	}
	return buf.Bytes(), nil
}

// decodeEntry is the events of a stored value, compressed or (an entry
// written before compression) not.
func decodeEntry(v []byte) ([]trace.Event, error) {
	if !bytes.HasPrefix(v, gzipMagic) {
		return trace.UnmarshalEvents(v)
	}
	r, _ := gzipReaders.Get().(*gzip.Reader)
	var err error
	if r == nil {
		r, err = gzip.NewReader(bytes.NewReader(v))
	} else {
		err = r.Reset(bytes.NewReader(v))
	}
	if err != nil {
		return nil, fmt.Errorf("replog: entry's gzip header: %w", err)
	}
	defer gzipReaders.Put(r)
	var lines bytes.Buffer
	if len(v) >= 8 { // gzip's trailer ends with the size of what it holds (mod 2³²): read into one array
		lines.Grow(int(min(binary.LittleEndian.Uint32(v[len(v)-4:]), maxEntryLines)))
	}
	if _, err := lines.ReadFrom(r); err != nil {
		return nil, fmt.Errorf("replog: decompress an entry: %w", err)
	}
	return trace.UnmarshalEvents(lines.Bytes())
}

// maxEntryLines caps the array decodeEntry sizes from an entry's trailer
// (a damaged trailer must not allocate gigabytes; a bigger entry still
// reads, growing it).
const maxEntryLines = 4 << 20
