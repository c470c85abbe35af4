// Package latency is ejbench's latency scenario: sequential triggers of a
// one-shard job, executor warm and cold, and each launch stage.
package latency
