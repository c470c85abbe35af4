package mesosframe

import (
	"errors"
	"strings"
	"testing"
)

func TestRecordsRoundTrip(t *testing.T) {
	var body []byte
	for _, r := range []string{"a", "", "line\nbreak", strings.Repeat("x", 300)} {
		body = AppendRecord(body, []byte(r))
	}
	recs, err := Records(body, 4)
	if err != nil || len(recs) != 4 || string(recs[2]) != "line\nbreak" || len(recs[3]) != 300 {
		t.Fatalf("records %q, %v", recs, err)
	}
	if _, err := Records(body, 3); !errors.Is(err, ErrTooManyRecords) {
		t.Errorf("four records with a bound of three: %v", err)
	}
}

func TestRecordsRefusesWhatIsNotRecordIO(t *testing.T) {
	for _, body := range []string{"3\nab", "x\nab", "-1\n", "2", "1\na9999999999999999999\n"} {
		var re *RecordError
		if _, err := Records([]byte(body), 10); !errors.As(err, &re) {
			t.Errorf("%q: %v, want a RecordError", body, err)
		}
	}
}
