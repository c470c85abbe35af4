package sdk

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Line protocol file descriptors of a resident process (see the package
// documentation): the executor writes RUN and CANCEL lines to RunFD, the
// process answers DONE lines on DoneFD.
const (
	RunFD  = 3
	DoneFD = 4
)

// Serve answers the line protocol: it reads RUN and CANCEL lines from in,
// runs the job for each RUN (one at a time) and writes a DONE line to out.
// It returns nil when in ends (the run in progress, if any, is cancelled
// and answered first) and ctx.Err() when ctx ends (likewise).
func Serve(ctx context.Context, job SimpleJob, in io.Reader, out io.Writer, stderr io.Writer) error {
	lines := readLines(ctx, in)
	sv := &server{ctx: ctx, job: job, out: out, stderr: stderr, results: make(chan runResult, 1)}
	for {
		select {
		case <-ctx.Done():
			return sv.finish(ctx.Err())
		case r := <-sv.results:
			sv.cancel()
			if err := sv.done(r); err != nil {
				return fmt.Errorf("write DONE: %w", err)
			}
		case line, ok := <-lines:
			if !ok {
				return sv.finish(nil)
			}
			if err := sv.line(line); err != nil {
				return fmt.Errorf("write DONE: %w", err)
			}
		}
	}
}

// readLines sends in's lines until it ends or ctx is done.
func readLines(ctx context.Context, in io.Reader) <-chan string {
	lines := make(chan string)
	go func() {
		defer close(lines)
		lr := NewLineReader(in, MaxLineBytes)
		for {
			line, err := lr.Next()
			if err != nil {
				return
			}
			select {
			case lines <- line:
			case <-ctx.Done():
				return
			}
		}
	}()
	return lines
}

// runResult is how a run ended.
type runResult struct {
	id  string
	err error
}

// server is Serve's state: the run in progress (one at a time), if any.
type server struct {
	ctx         context.Context
	job         SimpleJob
	out, stderr io.Writer
	results     chan runResult
	curID       string
	cancel      context.CancelFunc
}

// done answers a run that ended.
func (sv *server) done(r runResult) error {
	sv.curID, sv.cancel = "", nil
	_, err := io.WriteString(sv.out, FormatDone(r.id, r.err))
	return err
}

// finish stops: it cancels and answers the run in progress.
func (sv *server) finish(err error) error {
	if sv.cancel != nil {
		sv.cancel()
		if werr := sv.done(<-sv.results); werr != nil {
			return werr
		}
	}
	return err
}

// line acts on one protocol line: RUN starts a run (refused while one is
// in progress), CANCEL cancels the run it names; anything else is
// ignored with a word on stderr. The error is one writing an answer.
func (sv *server) line(line string) error {
	verb, rest, _ := strings.Cut(line, " ")
	id, arg, _ := strings.Cut(rest, " ")
	switch {
	case verb == "CANCEL":
		if sv.cancel != nil && id == sv.curID {
			sv.cancel()
		}
	case verb != "RUN" || id == "":
		fmt.Fprintf(sv.stderr, "elasticjob sdk: protocol line ignored: %.80q\n", line)
	case sv.cancel != nil:
		_, err := io.WriteString(sv.out, FormatDone(id, fmt.Errorf("run %s is still in progress", sv.curID)))
		return err
	default:
		var sc ShardingContext
		if err := json.Unmarshal([]byte(arg), &sc); err != nil {
			_, err := io.WriteString(sv.out, FormatDone(id, fmt.Errorf("bad sharding context: %w", err)))
			return err
		}
		rctx, stop := context.WithCancel(sv.ctx)
		sv.cancel, sv.curID = stop, id
		go func(id string) { sv.results <- runResult{id, call(rctx, sv.job, sc, sv.stderr)} }(id)
	}
	return nil
}

// FormatRun is the RUN line of a run.
func FormatRun(runID string, shardingContextJSON []byte) string {
	return "RUN " + runID + " " + string(shardingContextJSON) + "\n"
}

// FormatCancel is the CANCEL line of a run.
func FormatCancel(runID string) string { return "CANCEL " + runID + "\n" }

// FormatDone is the DONE line answering a run: "DONE id ok" or
// "DONE id error <message>" with the message escaped onto one line.
func FormatDone(runID string, err error) string {
	if err == nil {
		return "DONE " + runID + " ok\n"
	}
	msg := err.Error()
	if msg == "" {
		msg = "error"
	}
	return "DONE " + runID + " error " + Escape(msg) + "\n"
}

// ParseDone parses a DONE line (without its newline); failure is "" for
// "ok" and the unescaped message for "error" ("error" when the line has
// none, so a failure never reads as an empty message).
func ParseDone(line string) (runID string, ok bool, failure string, valid bool) {
	verb, rest, _ := strings.Cut(line, " ")
	id, res, _ := strings.Cut(rest, " ")
	if verb != "DONE" || id == "" {
		return "", false, "", false
	}
	switch {
	case res == "ok":
		return id, true, "", true
	case strings.HasPrefix(res, "error ") && len(res) > len("error "):
		return id, false, Unescape(strings.TrimPrefix(res, "error ")), true
	case res == "error", res == "error ": // no message: a failure all the same
		return id, false, "error", true
	}
	return "", false, "", false
}

// Escape puts a message on one line: backslash, newline and carriage
// return become \\, \n and \r.
func Escape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\r", `\r`).Replace(s)
}

// Unescape reverses Escape; other backslash sequences are kept as written.
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case '\\':
			b.WriteByte('\\')
		default:
			b.WriteByte('\\')
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// MaxLineBytes bounds a protocol line as read by Serve and by the executor:
// a longer line is cut to its first MaxLineBytes bytes and the rest of it
// discarded, so a peer that never ends a line cannot make the reader hold
// it all.
const MaxLineBytes = 1 << 20

// LineReader reads protocol lines of at most a given length.
type LineReader struct {
	br  *bufio.Reader
	max int
}

// NewLineReader reads lines from r, cutting each to limit bytes.
func NewLineReader(r io.Reader, limit int) *LineReader {
	return &LineReader{br: bufio.NewReaderSize(r, min(max(limit, 16), 64<<10)), max: limit}
}

// Next returns the next line without its line end ("\n", and any "\r" or
// "\n" before it), cut to the reader's maximum. At the end of the input it
// returns io.EOF (or the read error); a partial last line is dropped.
func (l *LineReader) Next() (string, error) {
	var line []byte
	for {
		chunk, err := l.br.ReadSlice('\n')
		if room := l.max - len(line); room > 0 {
			line = append(line, chunk[:min(len(chunk), room)]...)
		}
		switch {
		case err == nil:
			return strings.TrimRight(string(line), "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue // a long line: keep reading (and discarding past max)
		default:
			return "", err
		}
	}
}
