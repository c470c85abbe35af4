package executor

import "strings"

// TokenEnv is the variable an agent passes an executor's token in (Mesos'
// name). Only the executor may hold it: with it, anything could send status
// updates as this executor.
const TokenEnv = "MESOS_EXECUTOR_AUTHENTICATION_TOKEN"

// withoutVar is env without the variable name.
func withoutVar(env []string, name string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != name {
			out = append(out, kv)
		}
	}
	return out
}
