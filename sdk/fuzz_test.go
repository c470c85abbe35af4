package sdk

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/internal/fuzzing"
)

// refLines splits input as the protocol reads it: lines end in "\n"; a
// partial last line is dropped; each line (with its "\n") is cut to limit
// bytes, then loses its trailing "\r" and "\n" characters.
func refLines(input []byte, limit int) []string {
	segs := strings.Split(string(input), "\n")
	var out []string
	for _, seg := range segs[:len(segs)-1] {
		line := seg + "\n"
		line = line[:min(len(line), limit)]
		out = append(out, strings.TrimRight(line, "\r\n"))
	}
	return out
}

// FuzzLineReader: the reader returns exactly the reference's lines, each
// at most its limit long, for any input and limit.
func FuzzLineReader(f *testing.F) {
	for _, s := range []string{
		"RUN 1 {}\nCANCEL 1\n", "DONE 1 ok\r\nDONE 2 error a\\nb\n", "partial", "\n\n\r\n", "a\rb\n", "x\n" + strings.Repeat("y", 70_000) + "\nz\n",
	} {
		f.Add([]byte(s), uint16(8))
		f.Add([]byte(s), uint16(MaxLineBytes>>8))
	}
	f.Fuzz(func(t *testing.T, input []byte, limitBy uint16) {
		limit := int(limitBy) + 1
		var got []string
		fuzzing.Bounded(t, "LineReader", func() {
			lr := NewLineReader(bytes.NewReader(input), limit)
			for {
				line, err := lr.Next()
				if err != nil {
					return
				}
				got = append(got, line)
			}
		})
		if want := refLines(input, limit); !slices.Equal(got, want) {
			t.Fatalf("lines of %q (limit %d):\n got %q\nwant %q", input, limit, got, want)
		}
	})
}

// FuzzDoneLine: any line parses without panicking; a valid DONE line has a
// run id without spaces and, when it reports a failure, a non-empty
// message; formatting what was parsed gives a line that parses to the same;
// Escape puts any message on one line and Unescape restores it.
func FuzzDoneLine(f *testing.F) {
	for _, s := range []string{
		"DONE 1 ok", "DONE 2 error line one\\nline two \\\\ end", "DONE 3 error", "DONE 4 error ", "DONE  ok", "DONE 5", "DONE 5 okay",
		"RUN 1 {}", "DONE 6 error \\x\\", "DONE\t7 ok", "", "DONE 8 error \r", "DONE 9 ok extra",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if e := Escape(line); strings.ContainsAny(e, "\r\n") || Unescape(e) != line {
			t.Fatalf("Escape(%q) = %q, Unescape gives %q", line, e, Unescape(e))
		}
		id, ok, failure, valid := ParseDone(line)
		if !valid {
			return
		}
		if id == "" || strings.Contains(id, " ") || (!ok && failure == "") || (ok && failure != "") {
			t.Fatalf("ParseDone(%q) = %q, %v, %q", line, id, ok, failure)
		}
		var err error
		if !ok {
			err = errors.New(failure)
		}
		formatted := FormatDone(id, err)
		id2, ok2, failure2, valid2 := ParseDone(strings.TrimSuffix(formatted, "\n"))
		if !valid2 || id2 != id || ok2 != ok || failure2 != failure {
			t.Fatalf("ParseDone(%q) = %q %v %q; formatted as %q it parses to %q %v %q %v", line, id, ok, failure, formatted, id2, ok2, failure2, valid2)
		}
	})
}

// fuzzJob runs by its jobParameter: "fail:<message>" fails with the
// message, "panic" panics, "wait" runs until cancelled; anything else
// succeeds.
var fuzzJob = JobFunc(func(ctx context.Context, sc ShardingContext) error {
	switch p := sc.JobParameter; {
	case strings.HasPrefix(p, "fail:"):
		return errors.New(strings.TrimPrefix(p, "fail:"))
	case p == "panic":
		panic("fuzz job panicked")
	case p == "wait":
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
})

// FuzzServe feeds any input to Serve as the executor's side of the line
// protocol. Serve returns nil at the end of the input, every line it
// writes is a valid DONE line, and each RUN line with a run id is answered
// by exactly one DONE with that id (also RUN lines with a bad sharding
// context, RUNs while a run is in progress, and runs cancelled by CANCEL or
// by the end of the input).
func FuzzServe(f *testing.F) {
	for _, s := range []string{
		FormatRun("1", []byte(scJSON)) + FormatRun("2", []byte(strings.Replace(scJSON, `"p"`, `"fail:a\nb \\ c"`, 1))),
		FormatRun("1", []byte(strings.Replace(scJSON, `"p"`, `"wait"`, 1))) + FormatRun("2", []byte(scJSON)) + FormatCancel("1"),
		FormatRun("1", []byte(strings.Replace(scJSON, `"p"`, `"wait"`, 1))), "RUN 3 {not json\n", "RUN  {}\n", "RUN\n", "CANCEL\n",
		FormatRun("p", []byte(strings.Replace(scJSON, `"p"`, `"panic"`, 1))), "RUN 1 {}\r\nRUN 1 {}\n", "NOPE 1\n", "RUN 9 {}",
		"RUN 1 {\"jobParameter\":\"fail:\"}\n", "RUN 1 {\"shardingItem\":1e400}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		var out bytes.Buffer
		var err error
		fuzzing.Bounded(t, "Serve", func() {
			err = Serve(context.Background(), fuzzJob, bytes.NewReader(input), &out, io.Discard)
		})
		if err != nil {
			t.Fatalf("Serve(%q) = %v, want nil at the end of the input", input, err)
		}
		var runs []string
		for _, line := range refLines(input, MaxLineBytes) {
			verb, rest, _ := strings.Cut(line, " ")
			if id, _, _ := strings.Cut(rest, " "); verb == "RUN" && id != "" {
				runs = append(runs, id)
			}
		}
		var answered []string
		for _, line := range strings.SplitAfter(out.String(), "\n") {
			if line == "" {
				continue
			}
			id, _, _, valid := ParseDone(strings.TrimSuffix(line, "\n"))
			if !strings.HasSuffix(line, "\n") || !valid {
				t.Fatalf("Serve(%q) wrote %q", input, line)
			}
			answered = append(answered, id)
		}
		slices.Sort(runs)
		slices.Sort(answered)
		if !slices.Equal(runs, answered) {
			t.Fatalf("Serve(%q): RUN ids %q, answered %q\n%s", input, runs, answered, out.String())
		}
	})
}
