// Package mesosframe hardens the RecordIO framing of mesos-go v0.0.11, which
// the scheduler (events from the master) and the executor (events from the
// agent) both read their subscription streams with.
//
// mesos-go's recordio reader parses a frame's size as a uint64 and converts
// it to an int: a size of 2^63 or more turns negative and the reader panics
// (slice bounds out of range), on the goroutine that decodes the stream, so
// one bad frame from a master or agent crashed the scheduler or executor.
// Guard turns that panic into a
// framing error (and every later read into the same error), which ends the
// subscription like any other broken stream; JSONCodec is mesos-go's JSON
// codec with guarded decoders, and an encoder that writes a call's own
// (generated) JSON without encoding/json's second pass over it.
//
// Records and AppendRecord frame a batch of calls sent in one request (our
// executor's updates to the embedded agent) the same way on both sides.
package mesosframe
