package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestCollectCountsFilesLinesAndMethods(t *testing.T) {
	f, err := Collect("testdata/mod", false)
	if err != nil {
		t.Fatal(err)
	}
	if f.Files != 1 || f.Lines != 11 || f.Methods["a.T"] != 2 || f.LongFuncs != 0 {
		t.Fatalf("figures %+v", f)
	}
	f.FuncOv = 3
	var out bytes.Buffer
	f.Print(&out, 1)
	if !strings.Contains(out.String(), "a.T") || !strings.Contains(out.String(), "types over 1 methods 1") {
		t.Fatalf("print:\n%s", out.String())
	}
}

func TestCollectRefusesBadSource(t *testing.T) {
	if _, err := Collect("testdata/none", false); err == nil {
		t.Fatal("a missing folder gave no error")
	}
}

// Only a plain function's unused, named parameter is listed: not one
// named _, not a method's, not one of a function taken as a value; a
// field of the same name (T{n: …}.n) does not count as a use.
func TestUnusedParams(t *testing.T) {
	got, err := UnusedParams("testdata/params")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "p/p.go:5: dead b" {
		t.Fatalf("unused params %q", got)
	}
}
