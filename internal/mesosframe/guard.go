package mesosframe

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/mesos/mesos-go/api/v1/lib/encoding"
	"github.com/mesos/mesos-go/api/v1/lib/encoding/codecs"
	"github.com/mesos/mesos-go/api/v1/lib/encoding/framing"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
	fflib "github.com/pquerna/ffjson/fflib/v1"
)

// Guard returns r with a panic while reading a frame reported as an error
// wrapping framing.ErrorBadSize. The reader is left in an unknown state, so
// every later read fails with the same error.
func Guard(r framing.Reader) framing.Reader { return &guarded{r: r} }

type guarded struct {
	r      framing.Reader
	broken error
}

func (g *guarded) ReadFrame() (frame []byte, err error) {
	if g.broken != nil {
		return nil, g.broken
	}
	defer func() {
		if p := recover(); p != nil {
			g.broken = fmt.Errorf("%w: unreadable frame size (%v)", framing.ErrorBadSize, p)
			frame, err = nil, g.broken
		}
	}()
	return g.r.ReadFrame()
}

// NewDecoder is a codec's NewDecoder that reads frames through Guard and
// decodes each with unmarshal.
func NewDecoder(unmarshal framing.UnmarshalFunc) func(encoding.Source) encoding.Decoder {
	return func(s encoding.Source) encoding.Decoder {
		dec := framing.NewDecoder(Guard(s()), unmarshal)
		return encoding.DecoderFunc(func(u encoding.Unmarshaler) error { return dec.Decode(u) })
	}
}

// Unmarshal is json.Unmarshal for one frame. A value that decodes itself
// (mesos-go's generated types, and the event wrappers around them) is
// handed the frame once json.Valid has checked it: json.Unmarshal checks
// the frame too, but then scans it a second time to find the value's end
// before it calls that same method, and allocates a decoder's state per
// frame, for each status update the scheduler reads
// (BenchmarkDecodeUpdates). An invalid frame still gets json.Unmarshal's
// error, which says where.
func Unmarshal(b []byte, v any) error {
	u, ok := v.(json.Unmarshaler)
	if !ok || !json.Valid(b) {
		return json.Unmarshal(b, v)
	}
	return u.UnmarshalJSON(b)
}

// NewEncoder is mesos-go's JSON encoder without its detour through
// encoding/json: mesos-go's calls marshal themselves (generated ffjson
// code), and json.Marshal of such a value calls that same MarshalJSON, then
// validates and compacts its output into a second buffer. For a scheduler
// that sends an ACCEPT per offer and an ACKNOWLEDGE per status update, that
// detour was 1.6 % of its CPU and an eighth of all it allocated in the
// simulated cluster.
//
// A message that marshals itself with MarshalJSONBuf (every generated
// type) is written from a buffer of ffjson's pool, handed back once the
// frame is written: the writers of frames (framing.WriterFor, recordio)
// copy or send the bytes and keep none, as io.Writer's contract says. The
// buffer MarshalJSON leaves behind was 6 % of all the scheduler allocated.
func NewEncoder(s encoding.Sink) encoding.Encoder {
	w := s()
	return encoding.EncoderFunc(func(m encoding.Marshaler) error {
		bm, ok := m.(bufMarshaler)
		if !ok {
			b, err := m.MarshalJSON()
			if err != nil {
				return err
			}
			return w.WriteFrame(b)
		}
		var buf fflib.Buffer
		if c, ok := m.(*scheduler.Call); !ok || !writeAcknowledge(&buf, c) {
			if err := bm.MarshalJSONBuf(&buf); err != nil {
				return err
			}
		}
		b := buf.Bytes()
		err := w.WriteFrame(b)
		fflib.Pool(b)
		return err
	})
}

// writeAcknowledge writes an ACKNOWLEDGE call (framework id, type and
// acknowledgement, nothing else) as its MarshalJSONBuf would, except for
// the uuid: the generated code encodes bytes through a base64.NewEncoder,
// a 1 KiB value allocated for each call. One call per status update made
// that 2.7 % of all the scheduler allocated in the simulated cluster. It
// reports false, writing nothing, for any other call.
func writeAcknowledge(buf *fflib.Buffer, c *scheduler.Call) bool {
	a := c.Acknowledge
	if c.Type != scheduler.Call_ACKNOWLEDGE || a == nil ||
		*c != (scheduler.Call{FrameworkID: c.FrameworkID, Type: c.Type, Acknowledge: a}) {
		return false
	}
	buf.WriteString(`{ `)
	if c.FrameworkID != nil {
		buf.WriteString(`"framework_id":{"value":`)
		fflib.WriteJsonString(buf, c.FrameworkID.Value)
		buf.WriteString(`},`)
	}
	buf.WriteString(`"type":"ACKNOWLEDGE","acknowledge":{ "agent_id":{"value":`)
	fflib.WriteJsonString(buf, a.AgentID.Value)
	buf.WriteString(`},"task_id":{"value":`)
	fflib.WriteJsonString(buf, a.TaskID.Value)
	buf.WriteByte('}')
	if len(a.UUID) != 0 {
		var b64 [64]byte
		buf.WriteString(`,"uuid":"`)
		buf.Write(base64.StdEncoding.AppendEncode(b64[:0], a.UUID))
		buf.WriteByte('"')
	}
	buf.WriteString(`}}`)
	return true
}

// bufMarshaler is implemented by ffjson's generated types.
type bufMarshaler interface {
	MarshalJSONBuf(fflib.EncodingBuffer) error
}

// JSONCodec is mesos-go's JSON codec (codecs.ByMediaType[codecs.MediaTypeJSON])
// with guarded decoders and NewEncoder.
var JSONCodec = encoding.Codec{
	Name:       codecs.NameJSON,
	Type:       codecs.MediaTypeJSON,
	NewEncoder: NewEncoder,
	NewDecoder: NewDecoder(Unmarshal),
}

// ProtobufCodec is mesos-go's protobuf codec
// (codecs.ByMediaType[codecs.MediaTypeProtobuf]) with guarded decoders.
// Every mesos-go type marshals and unmarshals itself (generated code), and
// so do the wrappers that embed one (the scheduler's event).
var ProtobufCodec = encoding.Codec{
	Name: codecs.NameProtobuf,
	Type: codecs.MediaTypeProtobuf,
	NewEncoder: func(s encoding.Sink) encoding.Encoder {
		w := s()
		return encoding.EncoderFunc(func(m encoding.Marshaler) error {
			pm, ok := m.(interface{ Marshal() ([]byte, error) })
			if !ok {
				return fmt.Errorf("protobuf: %T does not marshal itself", m)
			}
			b, err := pm.Marshal()
			if err != nil {
				return err
			}
			return w.WriteFrame(b)
		})
	},
	NewDecoder: NewDecoder(func(b []byte, v any) error {
		pm, ok := v.(interface{ Unmarshal([]byte) error })
		if !ok {
			return fmt.Errorf("protobuf: %T does not unmarshal itself", v)
		}
		if r, ok := v.(interface{ Reset() }); ok {
			r.Reset() // generated code merges into what is there
		}
		return pm.Unmarshal(b)
	}),
}
