package mesosframe

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/mesos/mesos-go/api/v1/lib/encoding/framing"
	"github.com/mesos/mesos-go/api/v1/lib/recordio"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

func frames(stream string) framing.Reader { return recordio.NewReader(bytes.NewReader([]byte(stream))) }

func TestGuardTurnsThePanicIntoAnError(t *testing.T) {
	g := Guard(frames("2\n{}9227000000000000000\n"))
	if b, err := g.ReadFrame(); err != nil || string(b) != "{}" {
		t.Fatalf("first frame %q, %v", b, err)
	}
	for range 2 { // and stays broken
		if _, err := g.ReadFrame(); !errors.Is(err, framing.ErrorBadSize) {
			t.Fatalf("err = %v, want a bad frame size", err)
		}
	}
}

func TestGuardPassesFramesAndEOF(t *testing.T) {
	g := Guard(frames("2\n{}0\n3\n[1]"))
	for _, want := range []string{"{}", "[1]"} {
		if b, err := g.ReadFrame(); err != nil || string(b) != want {
			t.Fatalf("frame %q, %v; want %q", b, err, want)
		}
	}
	if _, err := g.ReadFrame(); !errors.Is(err, io.EOF) {
		t.Fatalf("err = %v, want EOF", err)
	}
}

func TestJSONCodecDecodesThroughTheGuard(t *testing.T) {
	dec := JSONCodec.NewDecoder(func() framing.Reader { return frames("17\n{\"type\":\"OFFERS\"}9227000000000000000\n{}") })
	var ev scheduler.Event
	if err := dec.Decode(&ev); err != nil || ev.Type != scheduler.Event_OFFERS {
		t.Fatalf("event %v, %v", ev.Type, err)
	}
	if err := dec.Decode(&ev); !errors.Is(err, framing.ErrorBadSize) {
		t.Fatalf("err = %v", err)
	}
}
