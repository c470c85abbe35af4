// Package fuzzing holds what the project's fuzz targets share: a hang
// detector (Bounded) and the limit it enforces.
//
// Go's fuzzing engine has no per-input time limit: an input that makes a
// decoder loop for an hour stalls the whole run until -timeout. Every fuzz
// target therefore runs the code under test through Bounded, which fails the
// input (so the engine records it as a crasher) when one call takes longer
// than HangLimit. The limit is a hang detector, thousands of times what the
// work needs, not a performance assertion.
package fuzzing
