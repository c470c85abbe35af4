package sdk

import (
	"bufio"
	"context"
	"encoding/json"
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
	lines := make(chan string)
	go func() {
		defer close(lines)
		br := bufio.NewReader(in)
		for {
			line, err := br.ReadString('\n')
			if err != nil { // a partial last line is dropped
				return
			}
			select {
			case lines <- strings.TrimRight(line, "\r\n"):
			case <-ctx.Done():
				return
			}
		}
	}()
	type result struct {
		id  string
		err error
	}
	var (
		results = make(chan result, 1)
		curID   string
		cancel  context.CancelFunc
	)
	done := func(r result) error {
		curID, cancel = "", nil
		_, err := io.WriteString(out, FormatDone(r.id, r.err))
		return err
	}
	finish := func(err error) error { // stop: cancel and answer the run in progress
		if cancel != nil {
			cancel()
			if werr := done(<-results); werr != nil {
				return werr
			}
		}
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return finish(ctx.Err())
		case r := <-results:
			cancel()
			if err := done(r); err != nil {
				return fmt.Errorf("write DONE: %w", err)
			}
		case line, ok := <-lines:
			if !ok {
				return finish(nil)
			}
			verb, rest, _ := strings.Cut(line, " ")
			id, arg, _ := strings.Cut(rest, " ")
			switch {
			case verb == "CANCEL":
				if cancel != nil && id == curID {
					cancel()
				}
			case verb != "RUN" || id == "":
				fmt.Fprintf(stderr, "elasticjob sdk: protocol line ignored: %.80q\n", line)
			case cancel != nil:
				if _, err := io.WriteString(out, FormatDone(id, fmt.Errorf("run %s is still in progress", curID))); err != nil {
					return fmt.Errorf("write DONE: %w", err)
				}
			default:
				var sc ShardingContext
				if err := json.Unmarshal([]byte(arg), &sc); err != nil {
					if _, err := io.WriteString(out, FormatDone(id, fmt.Errorf("bad sharding context: %w", err))); err != nil {
						return fmt.Errorf("write DONE: %w", err)
					}
					continue
				}
				rctx, stop := context.WithCancel(ctx)
				cancel, curID = stop, id
				go func(id string) { results <- result{id, call(rctx, job, sc, stderr)} }(id)
			}
		}
	}
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
// "ok" and the unescaped message for "error".
func ParseDone(line string) (runID string, ok bool, failure string, valid bool) {
	verb, rest, _ := strings.Cut(line, " ")
	id, res, _ := strings.Cut(rest, " ")
	if verb != "DONE" || id == "" {
		return "", false, "", false
	}
	switch {
	case res == "ok":
		return id, true, "", true
	case strings.HasPrefix(res, "error "):
		return id, false, Unescape(strings.TrimPrefix(res, "error ")), true
	case res == "error":
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
