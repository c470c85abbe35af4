package harness

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// PidWithEnv is a process whose environment holds kv ("NAME=value"), 0 when none does: how
// a test finds a task it started by a value only that task holds.
func PidWithEnv(kv string) int {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		for _, e := range bytes.Split(env, []byte{0}) {
			if string(e) == kv {
				return pid
			}
		}
	}
	return 0
}

// EnvOf is a variable of a process's environment ("" when it has none, or is gone).
func EnvOf(pid int, name string) string {
	env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	for _, e := range bytes.Split(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(e, []byte(name+"=")); ok {
			return string(v)
		}
	}
	return ""
}
