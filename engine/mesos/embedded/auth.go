package embedded

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/ejcloud/elasticjob/jobs"
)

// The cluster's HTTP endpoints answer only the scheduler and each executor
// for itself, never a task. Two credentials:
//
//   - The framework credential (Config.Principal and Config.Secret): HTTP
//     Basic on the scheduler API (SUBSCRIBE and every call), the operator
//     API and the read endpoints (/state, /slaves, /files/read,
//     /metrics/snapshot), as a Mesos master run with
//     --authenticate_http_frameworks and --authenticate_http_readonly
//     requires. The scheduler holds it; no task's environment does (the
//     framework id every task sees is not enough to SUBSCRIBE).
//   - An executor token per executor run: random, given to that executor
//     only in its environment (MESOS_EXECUTOR_AUTHENTICATION_TOKEN, the
//     variable a Mesos agent run with --authenticate_http_executors sets)
//     and sent back as "Authorization: Bearer <token>". The agent keeps
//     its SHA-256 (checkpointed with the process, so a restarted agent
//     takes the executor back) and accepts SUBSCRIBE, UPDATE and MESSAGE
//     only for the executor the token belongs to, and an UPDATE only for
//     that executor's own tasks. The executor keeps the variable out of its
//     tasks' environment.

// ExecutorTokenEnv is the variable an executor's token is passed in.
const ExecutorTokenEnv = "MESOS_EXECUTOR_AUTHENTICATION_TOKEN"

// tokenHash is the SHA-256 of an executor token; the zero value matches no
// token.
type tokenHash [sha256.Size]byte

func (h tokenHash) String() string { return hex.EncodeToString(h[:]) }

func parseTokenHash(s string) (tokenHash, bool) {
	var h tokenHash
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(h) {
		return h, false
	}
	copy(h[:], b)
	return h, true
}

// newExecutorToken makes a random token and its hash.
func newExecutorToken() (string, tokenHash) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	tok := hex.EncodeToString(b)
	return tok, sha256.Sum256([]byte(tok))
}

// matches reports whether token is the one h was made of.
func (h tokenHash) matches(token string) bool {
	if h == (tokenHash{}) || token == "" {
		return false
	}
	sum := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(sum[:], h[:]) == 1
}

// bearer is the token of an "Authorization: Bearer" header ("" without one).
func bearer(r *http.Request) string {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// authenticated wraps a framework or operator endpoint: with a configured
// secret, a request without the right HTTP Basic credential is refused 401
// before anything of it is read.
func (c *Cluster) authenticated(h http.HandlerFunc) http.HandlerFunc {
	if c.cfg.Secret == "" {
		return h
	}
	principal, secret := []byte(c.cfg.Principal), []byte(c.cfg.Secret)
	return func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		// Both compared, whatever the first says: no timing tells which was wrong.
		okUser := subtle.ConstantTimeCompare([]byte(user), principal)
		okPass := subtle.ConstantTimeCompare([]byte(pass), secret)
		if !ok || okUser&okPass != 1 {
			c.log.Warn("refused an unauthenticated request", "path", r.URL.Path, "remote", r.RemoteAddr,
				"credential", ok)
			unauthorized(w, `Basic realm="mesos"`)
			return
		}
		h(w, r)
	}
}

func unauthorized(w http.ResponseWriter, challenge string) {
	w.Header().Set("WWW-Authenticate", challenge)
	writeError(w, errorf(http.StatusUnauthorized, "Unauthorized"))
}

// ErrNotTaskExecutor is a secret fetch that does not come from the
// executor that runs its task.
var ErrNotTaskExecutor = errors.New("not the task's executor")

// CheckSecretFetch tells the scheduler whether a secret fetch for taskID
// comes from the executor this agent runs the task in: proof must be
// jobs.SecretFetchProof of that executor's token, which only that
// executor holds (a task never sees it). A fetch token read from anywhere
// is worth nothing without it. An executor an earlier version started,
// whose token the agent does not know, proves nothing: its tasks' fetches
// are refused (such executors leave at their idle timeout).
func (c *Cluster) CheckSecretFetch(taskID, proof string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var t *task
	for _, fw := range c.frameworks {
		if t = fw.tasks[taskID]; t != nil {
			break
		}
	}
	switch {
	case t == nil || t.exec == nil || t.exec.state == execTerminated:
		return fmt.Errorf("%w: this agent runs no task %s", ErrNotTaskExecutor, taskID)
	case proof == "":
		return fmt.Errorf("%w: the fetch carries no proof of its executor (%s)", ErrNotTaskExecutor, jobs.ExecutorProofHeader)
	case t.exec.token == (tokenHash{}):
		return fmt.Errorf("%w: task %s runs in executor %s, which an earlier version started without a token", ErrNotTaskExecutor, taskID, t.exec.id)
	}
	want := jobs.SecretFetchProof(t.exec.token, taskID)
	if subtle.ConstantTimeCompare([]byte(proof), []byte(want)) != 1 {
		return fmt.Errorf("%w: the proof is not that of executor %s, which runs task %s", ErrNotTaskExecutor, t.exec.id, taskID)
	}
	return nil
}
