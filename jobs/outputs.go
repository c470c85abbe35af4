package jobs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Outputs and inputs of workflow nodes.
//
// A shard may write `key=value` lines to the file named by OutputEnv; the
// executor reads it when the shard ends (ParseOutputs) and reports the map
// with the terminal status. A workflow node's outputs are the union of its
// shards' outputs; the nodes that depend on it receive them as inputs:
// environment variables InputEnvName(node, key) and "inputs" in the
// sharding context (node → key → value).
const (
	// OutputEnv names the environment variable holding the output file's path.
	OutputEnv = "ELASTICJOB_OUTPUT"
	// InputEnvPrefix starts the environment variables of inputs.
	InputEnvPrefix = "ELASTICJOB_INPUT_"
	// MaxOutputBytes bounds one shard's output file.
	MaxOutputBytes = 64 << 10
	// MaxInputBytes bounds the inputs handed to one node (the sum of every
	// key's and value's length).
	MaxInputBytes = 64 << 10
	// MaxOutputKeyBytes bounds one output key.
	MaxOutputKeyBytes = 128
)

// ErrOutput is wrapped by errors about a shard's output file.
var ErrOutput = errors.New("output")

// ParseOutputs reads an output file's `key=value` lines. Blank lines and
// lines starting with # are ignored; surrounding blanks of keys are
// trimmed, values are kept as written (up to the line's end, without a
// trailing \r); a later line with the same key wins. The file must hold at
// most MaxOutputBytes, and every other line must have a key and '='.
func ParseOutputs(b []byte) (map[string]string, error) {
	if len(b) > MaxOutputBytes {
		return nil, fmt.Errorf("%w: the %s file holds %d bytes, more than the %d bytes allowed", ErrOutput, OutputEnv, len(b), MaxOutputBytes)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), MaxOutputBytes+1)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%w: line %d of the %s file is not key=value: %q", ErrOutput, n, OutputEnv, clipText(line, 60))
		}
		if strings.ContainsRune(line, 0) {
			return nil, fmt.Errorf("%w: line %d of the %s file holds a NUL byte", ErrOutput, n, OutputEnv)
		}
		if len(k) > MaxOutputKeyBytes {
			return nil, fmt.Errorf("%w: line %d of the %s file: the key is longer than %d bytes", ErrOutput, n, OutputEnv, MaxOutputKeyBytes)
		}
		out[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: reading the %s file: %v", ErrOutput, OutputEnv, err)
	}
	return out, nil
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// InputEnvName is the environment variable of an input: ELASTICJOB_INPUT_
// then the node id and the key in upper case, with every character other
// than A-Z, 0-9 and _ as _ (ELASTICJOB_INPUT_EXTRACT_ROW_COUNT for node
// "extract", key "row-count").
func InputEnvName(node, key string) string {
	return InputEnvPrefix + envPart(node) + "_" + envPart(key)
}

func envPart(s string) string {
	b := []byte(strings.ToUpper(s))
	for i, c := range b {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// Inputs are what a node receives from the nodes it depends on: node id →
// key → value.
type Inputs map[string]map[string]string

// Size is the inputs' size as MaxInputBytes counts it.
func (in Inputs) Size() int {
	n := 0
	for node, kv := range in {
		for k, v := range kv {
			n += len(node) + len(k) + len(v)
		}
	}
	return n
}

// Env returns the inputs as environment variables (NAME=value), sorted.
// Two inputs whose names collide (keys "a-b" and "a_b") give the value of
// the one whose node and key sort last.
func (in Inputs) Env() []string {
	nodes := make([]string, 0, len(in))
	for n := range in {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	byName := map[string]string{}
	for _, n := range nodes {
		keys := make([]string, 0, len(in[n]))
		for k := range in[n] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			byName[InputEnvName(n, k)] = in[n][k]
		}
	}
	out := make([]string, 0, len(byName))
	for name, v := range byName {
		out = append(out, name+"="+v)
	}
	sort.Strings(out)
	return out
}
