package embedded

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
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
	return json.Unmarshal(b, m)
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
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		return c, errorf(http.StatusBadRequest, "Failed to read body: %v", err)
	}
	if err := c.decode(body, m); err != nil {
		return c, errorf(http.StatusBadRequest, "Failed to parse body into Call: %v", err)
	}
	return c, nil
}

// frame renders one RecordIO record.
func frame(b []byte) []byte {
	out := strconv.AppendInt(nil, int64(len(b)), 10)
	out = append(out, '\n')
	return append(out, b...)
}
