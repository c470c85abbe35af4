package embedded

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/ejcloud/elasticjob/internal/mesosframe"
	fflib "github.com/pquerna/ffjson/fflib/v1"
)

const (
	typeJSON     = "application/json"
	typeProtobuf = "application/x-protobuf"
	typeRecordIO = "application/recordio"
	maxBody      = 16 << 20
)

// message is implemented by every generated mesos-go protobuf type.
type message interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// codec encodes messages in one media type (JSON or protobuf).
type codec struct{ proto bool }

func (c codec) mediaType() string {
	if c.proto {
		return typeProtobuf
	}
	return typeJSON
}

func (c codec) encode(m message) ([]byte, error) {
	if c.proto {
		return m.Marshal()
	}
	if j, ok := m.(json.Marshaler); ok {
		// mesos-go's generated (ffjson) encoder writes compact JSON;
		// json.Marshal would only re-validate and compact it again.
		return j.MarshalJSON()
	}
	return json.Marshal(m)
}

func (c codec) decode(b []byte, m message) error {
	if c.proto {
		return m.Unmarshal(b)
	}
	// Checked once, then handed to the generated decoder: json.Unmarshal
	// would scan the body twice (see mesosframe.Unmarshal).
	return mesosframe.Unmarshal(b, m)
}

func codecFor(mediaType string) (codec, bool) {
	mt, _, err := mime.ParseMediaType(mediaType)
	if err != nil {
		return codec{}, false
	}
	switch mt {
	case typeJSON:
		return codec{}, true
	case typeProtobuf:
		return codec{proto: true}, true
	}
	return codec{}, false
}

// streamFormat describes the response of a streaming call: the Content-Type
// header, an optional Message-Content-Type header and the message codec.
type streamFormat struct {
	contentType string
	messageType string
	codec       codec
}

// negotiateStream picks the stream format from Accept (and Message-Accept
// when Accept is application/recordio), as a Mesos master does. A missing
// or wildcard Accept means the request's own codec.
func negotiateStream(r *http.Request, req codec) (streamFormat, error) {
	accept := r.Header.Get("Accept")
	if accept == "" || accept == "*/*" {
		return streamFormat{contentType: req.mediaType(), codec: req}, nil
	}
	if mt, _, _ := mime.ParseMediaType(accept); mt == typeRecordIO {
		msg := r.Header.Get("Message-Accept")
		if msg == "" || msg == "*/*" {
			msg = req.mediaType()
		}
		c, ok := codecFor(msg)
		if !ok {
			return streamFormat{}, fmt.Errorf("message type %q is not supported", msg)
		}
		return streamFormat{contentType: typeRecordIO, messageType: c.mediaType(), codec: c}, nil
	}
	c, ok := codecFor(accept)
	if !ok {
		return streamFormat{}, fmt.Errorf("'Accept' header %q is not supported", accept)
	}
	return streamFormat{contentType: c.mediaType(), codec: c}, nil
}

// httpError is a call rejected with an HTTP status and a text body.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func errorf(code int, format string, args ...any) *httpError {
	return &httpError{code: code, msg: fmt.Sprintf(format, args...)}
}

func writeError(w http.ResponseWriter, e *httpError) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(e.code)
	_, _ = io.WriteString(w, e.msg)
}

// readCall validates the method and Content-Type and decodes the body.
func readCall(w http.ResponseWriter, r *http.Request, m message) (codec, *httpError) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return codec{}, errorf(http.StatusMethodNotAllowed, "Expecting 'POST', received '%s'", r.Method)
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return codec{}, errorf(http.StatusBadRequest, "Expecting 'Content-Type' to be present")
	}
	c, ok := codecFor(ct)
	if !ok {
		return codec{}, errorf(http.StatusUnsupportedMediaType, "Expecting 'Content-Type' of %s or %s", typeJSON, typeProtobuf)
	}
	body, err := readBody(http.MaxBytesReader(w, r.Body, maxBody), r.ContentLength)
	if err != nil {
		return c, errorf(http.StatusBadRequest, "Failed to read body: %v", err)
	}
	if err := c.decode(body, m); err != nil {
		return c, errorf(http.StatusBadRequest, "Failed to parse body into Call: %v", err)
	}
	return c, nil
}

// readBody reads a call's body into one buffer of its declared length
// (io.ReadAll would start at 512 bytes and grow it several times for every
// LAUNCH, UPDATE and ACKNOWLEDGE); a body without a length, or longer than
// it said, still reads whole (the limit being body's).
func readBody(body io.Reader, length int64) ([]byte, error) {
	if length <= 0 || length > maxBody {
		return io.ReadAll(body)
	}
	var b bytes.Buffer
	b.Grow(int(length) + bytes.MinRead) // room for the read that sees EOF
	_, err := b.ReadFrom(body)
	return b.Bytes(), err
}

// bufMarshaler is implemented by mesos-go's generated (ffjson) types.
type bufMarshaler interface {
	MarshalJSONBuf(fflib.EncodingBuffer) error
}

// encodeFrame encodes m as one RecordIO record. A JSON message is written
// into a buffer of ffjson's pool, copied once into its record and the
// buffer handed back: encode and then frame allocated the message twice
// (its MarshalJSON keeps the pool's buffer) for every event an agent or
// master sends.
func (c codec) encodeFrame(m message) ([]byte, error) {
	bm, ok := m.(bufMarshaler)
	if c.proto || !ok {
		b, err := c.encode(m)
		if err != nil {
			return nil, err
		}
		return frame(b), nil
	}
	var buf fflib.Buffer
	if err := bm.MarshalJSONBuf(&buf); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	out := make([]byte, 0, len(b)+21) // the length's digits and the newline
	out = strconv.AppendInt(out, int64(len(b)), 10)
	out = append(append(out, '\n'), b...)
	fflib.Pool(b)
	return out, nil
}

// frame renders one RecordIO record.
func frame(b []byte) []byte {
	out := strconv.AppendInt(nil, int64(len(b)), 10)
	out = append(out, '\n')
	return append(out, b...)
}
