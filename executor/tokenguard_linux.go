package executor

import "golang.org/x/sys/unix"

// guardToken makes this process not dumpable when it holds a token: its
// /proc/<pid>/environ (which still shows the token it started with) and
// its memory are then readable by root only, not by the tasks it starts
// under the same user. Children are dumpable again after exec. (An agent
// that is not root then cannot find the executor by its environment either;
// it knows its pid, and its tasks stay findable.)
func guardToken(token string) {
	if token != "" {
		_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	}
}
