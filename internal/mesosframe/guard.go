package mesosframe

import (
	"encoding/json"
	"fmt"

	"github.com/mesos/mesos-go/api/v1/lib/encoding"
	"github.com/mesos/mesos-go/api/v1/lib/encoding/codecs"
	"github.com/mesos/mesos-go/api/v1/lib/encoding/framing"
	mjson "github.com/mesos/mesos-go/api/v1/lib/encoding/json"
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

// JSONCodec is mesos-go's JSON codec (codecs.ByMediaType[codecs.MediaTypeJSON])
// with guarded decoders.
var JSONCodec = encoding.Codec{
	Name:       codecs.NameJSON,
	Type:       codecs.MediaTypeJSON,
	NewEncoder: mjson.NewEncoder,
	NewDecoder: NewDecoder(json.Unmarshal),
}
