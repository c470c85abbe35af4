package mesosframe

import (
	"bytes"
	"errors"
	"strconv"
)

// A batch of calls in one request (our executor's updates to the embedded
// agent) is a RecordIO body, "<length>\n<bytes>" per record: the executor
// writes it with AppendRecord and the agents split it with Records, so
// writer and readers agree on one framing.

// AppendRecord appends rec to body as one RecordIO record.
func AppendRecord(body, rec []byte) []byte {
	body = append(strconv.AppendInt(body, int64(len(rec)), 10), '\n')
	return append(body, rec...)
}

// ErrTooManyRecords is Records' error for a body of more than its bound.
var ErrTooManyRecords = errors.New("too many records")

// RecordError is Records' error for a body whose record Index is not a
// RecordIO record (a bad or missing length, or a length past the end).
type RecordError struct{ Index int }

func (e *RecordError) Error() string {
	return "record " + strconv.Itoa(e.Index) + " is not a RecordIO record"
}

// Records splits a RecordIO body into its records (slices of body), at
// most limit of them (ErrTooManyRecords past it).
func Records(body []byte, limit int) ([][]byte, error) {
	var recs [][]byte
	for len(body) > 0 {
		if len(recs) == limit {
			return nil, ErrTooManyRecords
		}
		nl := bytes.IndexByte(body, '\n')
		n, err := strconv.Atoi(string(body[:max(nl, 0)]))
		if nl < 0 || err != nil || n < 0 || n > len(body)-nl-1 {
			return nil, &RecordError{Index: len(recs)}
		}
		recs = append(recs, body[nl+1:nl+1+n])
		body = body[nl+1+n:]
	}
	return recs, nil
}
