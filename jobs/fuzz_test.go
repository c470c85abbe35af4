package jobs

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/internal/fuzzing"
)

// FuzzShardingItemParameters: any string and total either parse to items in
// [0, total) whose parameters carry no list separator or surrounding space,
// and which render back ("0=a,1=b") to the same map; or fail with ErrInvalid
// naming shardingItemParameters.
func FuzzShardingItemParameters(f *testing.F) {
	for _, s := range []string{
		"0=Beijing,1=Shanghai,2=Guangzhou", " 0=Beijing, 1=Shang=hai ,2= ", "", " , ,", "0=a,0=b", "3=x", "-1=x",
		"x=1", "0", "0=", "=0", "+1=a", "00=a", "1 = a b ", "0=\u00a0a\u3000", "9223372036854775808=x", "0=a,,1=b",
	} {
		f.Add(s, 3)
	}
	f.Add("0=a", 0)
	f.Add("0=a", -5)
	f.Add("9999=last", MaxShards)
	f.Fuzz(func(t *testing.T, s string, total int) {
		var got map[int]string
		var err error
		fuzzing.Bounded(t, "ParseShardingItemParameters", func() { got, err = ParseShardingItemParameters(s, total) })
		if err != nil {
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "shardingItemParameters") {
				t.Fatalf("ParseShardingItemParameters(%q, %d): error %v does not wrap ErrInvalid or name the field", s, total, err)
			}
			return
		}
		var parts []string
		for _, item := range slices.Sorted(maps.Keys(got)) {
			v := got[item]
			if item < 0 || item >= total {
				t.Fatalf("%q: item %d outside [0, %d)", s, item, total)
			}
			if strings.Contains(v, ",") || strings.TrimSpace(v) != v {
				t.Fatalf("%q: item %d parameter %q holds a separator or surrounding space", s, item, v)
			}
			parts = append(parts, strconv.Itoa(item)+"="+v)
		}
		again, err := ParseShardingItemParameters(strings.Join(parts, ","), total)
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("%q parsed to %v, which renders back to %v (%v)", s, got, again, err)
		}
	})
}

// FuzzTaskID: a task id or running key that parses renders back to exactly
// the same string, so two spellings never name one task.
func FuzzTaskID(f *testing.F) {
	for _, s := range []string{
		"my_job@-@2@-@FAILOVER@-@agent-S0@-@0b6c5e4e-5b0b-4e5f-9d7a-1f2e3d4c5b6a", "j@-@0@-@READY@-@a@-@u", "",
		"a@-@b", "j@-@x@-@READY@-@a@-@u", "j@-@-1@-@READY@-@a@-@u", "j@-@0@-@NOPE@-@a@-@u", "j@-@+1@-@READY@-@a@-@u",
		"j@-@007@-@READY@-@a@-@u", "j@-@0@-@READY@-@a@-@u@-@extra", "@-@@-@@-@@-@", "j@-@1", "j@-@01",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if id, err := ParseTaskID(s); err == nil {
			if id.String() != s || id.Item < 0 {
				t.Fatalf("ParseTaskID(%q) = %+v, which renders as %q", s, id, id.String())
			}
		}
		if job, item, err := ParseMetaKey(s); err == nil {
			if MetaKey(job, item) != s || item < 0 {
				t.Fatalf("ParseMetaKey(%q) = %q, %d, which renders as %q", s, job, item, MetaKey(job, item))
			}
		}
		if a, ag, err := ParseExecutorID(s); err == nil && (a == "" || ExecutorID(a, ag) != s) {
			t.Fatalf("ParseExecutorID(%q) = %q, %q", s, a, ag)
		}
	})
}

// FuzzTaskData: the TaskInfo payload the executor decodes either fails
// with an error or decodes to data that encodes (Marshal never panics) and
// decodes back to the same value.
func FuzzTaskData(f *testing.F) {
	valid := TaskData{Version: TaskDataVersion,
		ShardingContext: ShardingContext{JobName: "my_job", TaskID: "my_job@-@0@-@READY@-@a@-@u", ShardingTotalCount: 2, ShardingParameter: "Beijing"},
		ExecutionSource: SourceNormal, Job: Default(), App: app.Default()}
	valid.Job.JobName, valid.Job.AppName, valid.App.AppName = "my_job", "my_app", "my_app"
	f.Add(valid.Marshal())
	for _, s := range []string{
		`{}`, `null`, `[]`, `{"version":1}`, `{"version":2,"shardingContext":{"jobName":"j"},"app":{"appName":"a"}}`,
		`{"version":1,"shardingContext":{"jobName":"j"},"app":{"appName":"a"},"job":{"props":null,"cpuCount":1e308}}`,
		`{"version":1,"shardingContext":{"jobName":"j","shardingItem":-1},"app":{"appName":"a"},"job":{"props":{"k":"\ud800"}}}`,
		`{"version":1.5}`, `{"version":1,"version":1}`, "{\"version\":1,\"shardingContext\":{\"jobName\":\"\xff\"},\"app\":{\"appName\":\"a\"}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var d TaskData
		var err error
		fuzzing.Bounded(t, "UnmarshalTaskData", func() { d, err = UnmarshalTaskData(b) })
		if err != nil {
			return
		}
		var enc []byte
		fuzzing.Bounded(t, "Marshal", func() { enc = d.Marshal() })
		back, err := UnmarshalTaskData(enc)
		if err != nil {
			t.Fatalf("%q decoded to %+v, whose encoding %s does not decode: %v", b, d, enc, err)
		}
		if d.Job.Props == nil {
			d.Job.Props = map[string]string{} // encoded as {}, by design
		}
		if !reflect.DeepEqual(back, d) {
			t.Fatalf("round trip of %q:\n got %+v\nwant %+v", b, back, d)
		}
	})
}
