// Package estimate says how long a job's runs take and when a running one
// is expected to end: the 90th percentile of its recent run durations
// (P90), or its timeout when there are too few runs to tell. It is pure
// (no clock, no I/O): the launch round uses it to say when the work that
// holds the resources a waiting job needs should free them, the API and
// the console show a job's duration trend with it, and a capacity policy
// can lend resources to work expected to end in time with the same
// figure.
package estimate
