// Package fakeagent is a test double of a Mesos agent's v1 executor API
// (JSON codec): it records calls, streams the events a test feeds it as
// RecordIO, and can acknowledge updates by itself.
package fakeagent
