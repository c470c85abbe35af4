// Package datadriven runs scenario files (the etcd/raft datadriven
// shape): each case is input lines, a "----" line, and the expected
// output up to a blank line; '#' lines and blank lines between cases are
// comments. A test turns a case's input into output lines with a pure
// decision; with -rewrite the expected output is written from what the
// decision returned. round's launch rounds, the task machine and the
// producer's timing are tested this way.
package datadriven
