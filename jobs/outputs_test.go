package jobs

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseOutputs(t *testing.T) {
	got, err := ParseOutputs([]byte("a=1\r\n# c\n\n b =x=y\na=2\nempty=\n"))
	if err != nil || !reflect.DeepEqual(got, map[string]string{"a": "2", "b": "x=y", "empty": ""}) {
		t.Fatalf("%q %v", got, err)
	}
	for in, want := range map[string]string{
		"novalue\n":                    `line 1 of the ELASTICJOB_OUTPUT file is not key=value: "novalue"`,
		"ok=1\n=v\n":                   "line 2",
		"k=\x00\n":                     "NUL byte",
		strings.Repeat("k", 129) + "=": "the key is longer than 128 bytes",
		strings.Repeat("x", 70000):     "more than the 65536 bytes allowed",
	} {
		if _, err := ParseOutputs([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.20q: %v, want %q", in, err, want)
		}
	}
}

func TestInputEnv(t *testing.T) {
	if got := InputEnvName("extract", "row-count"); got != "ELASTICJOB_INPUT_EXTRACT_ROW_COUNT" {
		t.Fatal(got)
	}
	in := Inputs{"a": {"k": "1", "x.y": "2"}, "b": {"k": "3"}}
	if got := in.Env(); !reflect.DeepEqual(got, []string{"ELASTICJOB_INPUT_A_K=1", "ELASTICJOB_INPUT_A_X_Y=2", "ELASTICJOB_INPUT_B_K=3"}) {
		t.Fatal(got)
	}
	if in.Size() != len("ak1")+len("ax.y2")+len("bk3") {
		t.Fatal(in.Size())
	}
}
