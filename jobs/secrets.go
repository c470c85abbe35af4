package jobs

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// SecretRef is one secret a job's shards get: a secret of the job's
// namespace (Name), delivered as an environment variable (Env) or as a
// file (File, a path under the task's secrets directory,
// $ELASTICJOB_SECRETS_DIR, mode 0400, removed when the task ends). A
// reference carries names only, never a value.
//
// On Kubernetes an entry may instead name an existing Kubernetes Secret
// of the Kubernetes namespace the job's namespace runs in
// (KubernetesSecret, and Key, one of its keys): the pod gets it by
// reference (a secretKeyRef variable, or a secret volume whose file the
// executor copies into the secrets directory); the scheduler never reads
// it.
type SecretRef struct {
	Name             string `json:"name,omitempty"`
	KubernetesSecret string `json:"kubernetesSecret,omitempty"`
	Key              string `json:"key,omitempty"`
	Env              string `json:"env,omitempty"`
	File             string `json:"file,omitempty"`
}

// KubeSecretsMount is where a pod mounts the Kubernetes Secrets its job's
// file entries name, one directory per Secret holding the keys named
// (KubeSecretPath); the executor copies each into the secrets directory.
const KubeSecretsMount = "/var/run/elasticjob/kube-secrets"

// KubeSecretPath is where a pod holds key of Kubernetes Secret secret.
func KubeSecretPath(secret, key string) string { return KubeSecretsMount + "/" + secret + "/" + key }

// KubeSecrets lists the job's entries that name Kubernetes Secrets.
func (c Config) KubeSecrets() []SecretRef {
	var out []SecretRef
	for _, r := range c.Secrets {
		if r.KubernetesSecret != "" {
			out = append(out, r)
		}
	}
	return out
}

// SecretAccess is how a task's executor fetches its job's secrets from
// the scheduler when the task starts (POST /executor/v1/secrets): where,
// and the task's fetch token, which the scheduler honours only while the
// task runs. It is in the task's payload instead of any value.
type SecretAccess struct {
	URLs  []string `json:"urls"`
	Token string   `json:"token"`
}

// ExecutorProofHeader carries, with a secret fetch, the proof that the
// caller is the executor that runs the task: SecretFetchProof of its
// agent's executor token.
const ExecutorProofHeader = "X-Elasticjob-Executor-Proof"

// SecretFetchProof is what an executor holding an agent's executor token
// sends with its task's secret fetch: an HMAC of the task id keyed with
// the token's SHA-256, which is all the embedded agent keeps of it. The
// token itself never leaves the executor, and a proof opens one task's
// fetch, once, and nothing at the agent.
func SecretFetchProof(tokenSHA256 [sha256.Size]byte, taskID string) string {
	m := hmac.New(sha256.New, tokenSHA256[:])
	m.Write([]byte("secret-fetch\x00" + taskID))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// SecretsDirEnv names the task's secrets directory in a shard's
// environment.
const SecretsDirEnv = "ELASTICJOB_SECRETS_DIR"

// MaxSecretRefs bounds a job's secrets.
const MaxSecretRefs = 64

// The patterns are compiled on first use, not at the start of every process that
// links this package (the executor starts once per pod; see lazyRE).
var (
	// kubeObjectRE is a Kubernetes object name (a DNS subdomain); kubeKeyRE a Secret's key.
	kubeObjectRE = lazyRE(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	kubeKeyRE    = lazyRE(`^[-._a-zA-Z0-9]{1,253}$`)
	secretNameRE = lazyRE(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	envNameRE    = lazyRE(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
)

// lazyRE compiles expr on its first use: the counted repetitions and Unicode classes of
// these patterns took about 4 ms of CPU at every start of a process linking the package.
func lazyRE(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// reservedEnv are variables a secret may not set: the executor's own and
// the loader's.
func reservedEnv(name string) bool {
	return strings.HasPrefix(name, "ELASTICJOB_") || strings.HasPrefix(name, "MESOS_") || strings.HasPrefix(name, "LD_") ||
		name == "PATH" || name == "HOME"
}

// OwnSecrets lists the names of the namespace's secrets the job names.
func (c Config) OwnSecrets() []string {
	var out []string
	for _, r := range c.Secrets {
		if r.Name != "" && !slices.Contains(out, r.Name) {
			out = append(out, r.Name)
		}
	}
	return out
}

// validateSecrets checks the secrets field: each entry names one secret
// and one target, no two entries the same target.
func (c Config) validateSecrets() error {
	if len(c.Secrets) == 0 {
		return nil
	}
	if c.JobType == TypeHTTP {
		return fmt.Errorf("%w: secrets: an HTTP job runs no process to hand them to", ErrInvalid)
	}
	if len(c.Secrets) > MaxSecretRefs {
		return fmt.Errorf("%w: secrets: at most %d entries, got %d", ErrInvalid, MaxSecretRefs, len(c.Secrets))
	}
	targets := map[string]bool{}
	for i, r := range c.Secrets {
		where := fmt.Sprintf("secrets[%d]", i)
		switch {
		case r.Name != "" && r.KubernetesSecret != "":
			return fmt.Errorf("%w: %s: give name (a secret of the namespace) or kubernetesSecret (a Kubernetes Secret), not both", ErrInvalid, where)
		case r.KubernetesSecret != "" && (len(r.KubernetesSecret) > 253 || !kubeObjectRE().MatchString(r.KubernetesSecret)):
			return fmt.Errorf("%w: %s: kubernetesSecret %q is not a Kubernetes object name", ErrInvalid, where, r.KubernetesSecret)
		case r.KubernetesSecret != "" && (!kubeKeyRE().MatchString(r.Key) || r.Key == "." || r.Key == ".."):
			return fmt.Errorf("%w: %s: key %q must name a key of Kubernetes Secret %s (letters, digits, '-', '_', '.')", ErrInvalid, where, r.Key, r.KubernetesSecret)
		case r.KubernetesSecret == "" && r.Key != "":
			return fmt.Errorf("%w: %s: key is for a kubernetesSecret entry", ErrInvalid, where)
		case r.Name == "" && r.KubernetesSecret == "":
			return fmt.Errorf("%w: %s: name the secret of the namespace to deliver", ErrInvalid, where)
		case r.Name != "" && !secretNameRE().MatchString(r.Name):
			return fmt.Errorf("%w: %s: name %q is not a secret's name (1-128 letters, digits, '.', '_' or '-')", ErrInvalid, where, r.Name)
		case (r.Env == "") == (r.File == ""):
			return fmt.Errorf("%w: %s: give one target: env (a variable name) or file (a path in the task's secrets directory)", ErrInvalid, where)
		case r.Env != "" && (!envNameRE().MatchString(r.Env) || reservedEnv(r.Env)):
			return fmt.Errorf("%w: %s: env %q must be a variable name, not PATH, HOME or one starting ELASTICJOB_, MESOS_ or LD_", ErrInvalid, where, r.Env)
		case r.File != "" && !validSecretFile(r.File):
			return fmt.Errorf("%w: %s: file %q must be a relative path inside the task's secrets directory (no '..', at most 255 characters)", ErrInvalid, where, r.File)
		}
		t := "env:" + r.Env
		if r.File != "" {
			t = "file:" + r.File
		}
		if targets[t] {
			return fmt.Errorf("%w: %s: %s is the target of two entries", ErrInvalid, where, strings.TrimPrefix(strings.TrimPrefix(t, "env:"), "file:"))
		}
		targets[t] = true
	}
	return nil
}

func validSecretFile(f string) bool {
	return len(f) <= 255 && !strings.HasPrefix(f, "/") && path.Clean(f) == f && f != "." && !strings.HasPrefix(f, "../") &&
		f != ".." && !strings.ContainsAny(f, "\x00\\")
}
