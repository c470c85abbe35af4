package executor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
)

// A job's secrets reach its shards here (docs/tenancy.md, "Secrets"): the
// task's payload names them and carries a fetch token, never a value; as
// the task starts, the executor asks the scheduler for the values (POST
// /executor/v1/secrets, answered only while the task runs) and hands them
// to the shard's process as environment variables or as files of mode
// 0400 in the task's secrets directory, which is removed when the task
// ends. No value is logged.

// secretsPath is the scheduler's route (api.ExecutorSecretsPath).
const secretsPath = "/executor/v1/secrets"

// taskTokenHeader carries the task's token (api.TaskTokenHeader).
const taskTokenHeader = "X-Elasticjob-Task-Token"

func secretsDirOf(taskDir string) string { return filepath.Join(taskDir, "secrets") }

// SecretsClient fetches a task's secrets from the scheduler.
type SecretsClient struct {
	HTTP *http.Client
	// Tries bounds the attempts per URL on a fault (a scheduler restarting,
	// a leader changing); default 5, a second apart and more.
	Tries int
	// ExecutorToken is the agent's token for this executor
	// (MESOS_EXECUTOR_AUTHENTICATION_TOKEN; "" in a pod): a fetch carries
	// a proof made with it (jobs.SecretFetchProof), by which the embedded
	// agent tells the scheduler that the fetch comes from the executor
	// that runs the task. The token itself is never sent.
	ExecutorToken string
}

type fetched struct {
	Secrets []struct {
		Name  string `json:"name"`
		Value []byte `json:"value"`
	} `json:"secrets"`
}

// errSecretsRefused is a refusal the scheduler gave: no retry helps.
var errSecretsRefused = errors.New("the scheduler refused the task's secrets")

// Fetch returns the values of the secrets of a task's job, by name.
func (sc SecretsClient) Fetch(ctx context.Context, acc jobs.SecretAccess, taskID string) (map[string][]byte, error) {
	client := sc.HTTP
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	tries := sc.Tries
	if tries <= 0 {
		tries = 5
	}
	body, _ := json.Marshal(map[string]string{"taskId": taskID})
	proof := ""
	if sc.ExecutorToken != "" {
		proof = jobs.SecretFetchProof(sha256.Sum256([]byte(sc.ExecutorToken)), taskID)
	}
	var last error
	for try := 0; try < tries; try++ {
		if try > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(try) * time.Second):
			}
		}
		for _, base := range acc.URLs {
			out, err := fetchOnce(ctx, client, strings.TrimRight(base, "/")+secretsPath, acc.Token, proof, body)
			if err == nil || errors.Is(err, errSecretsRefused) {
				return out, err
			}
			last = err
		}
	}
	return nil, fmt.Errorf("fetch the job's secrets from the scheduler: %w", last)
}

func fetchOnce(ctx context.Context, client *http.Client, url, token, proof string, body []byte) (map[string][]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(taskTokenHeader, token)
	if proof != "" {
		req.Header.Set(jobs.ExecutorProofHeader, proof)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var m struct{ Message string }
		_ = json.Unmarshal(b, &m)
		err := fmt.Errorf("%s: %s", resp.Status, m.Message)
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			return nil, err // a fault or a leader changing: try again
		}
		return nil, fmt.Errorf("%w: %v", errSecretsRefused, err)
	}
	var f fetched
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("the scheduler's answer: %w", err)
	}
	clear(b)
	out := make(map[string][]byte, len(f.Secrets))
	for _, s := range f.Secrets {
		out[s.Name] = s.Value
	}
	return out, nil
}

// deliverSecrets gets a task's secrets and returns the environment
// entries that hand them to its process (files are written into the
// task's secrets directory, which the caller removes when the task ends).
func (p *Pipeline) deliverSecrets(ctx context.Context, td jobs.TaskData, taskID, taskDir string) ([]string, error) {
	refs := td.Job.Secrets
	if len(refs) == 0 {
		return nil, nil
	}
	values := map[string][]byte{}
	if len(td.Job.OwnSecrets()) > 0 {
		if td.SecretAccess == nil || len(td.SecretAccess.URLs) == 0 {
			return nil, errors.New("the job names secrets, and its task carries no way to fetch them (set secrets_key_file on the scheduler)")
		}
		var err error
		if values, err = p.Secrets.Fetch(ctx, *td.SecretAccess, taskID); err != nil {
			return nil, err
		}
	}
	var env []string
	var root *os.Root
	defer func() {
		if root != nil {
			root.Close()
		}
	}()
	for _, r := range refs {
		if r.KubernetesSecret != "" && r.Env != "" {
			continue // the pod's environment has it (a secretKeyRef): the executor's process passes it on
		}
		v, ok := values[r.Name]
		if r.KubernetesSecret != "" { // the pod mounts it; a copy goes where the job looks for its secrets
			b, err := os.ReadFile(jobs.KubeSecretPath(r.KubernetesSecret, r.Key))
			if err != nil {
				return nil, fmt.Errorf("Kubernetes Secret %s, key %s: %w (only pods of the Kubernetes engine mount it)", r.KubernetesSecret, r.Key, err)
			}
			v, ok = b, true
		}
		if !ok {
			return nil, fmt.Errorf("the scheduler did not give secret %q (the job's secrets changed since the task was launched?)", r.Name)
		}
		if r.Env != "" {
			env = append(env, r.Env+"="+string(v))
			continue
		}
		if root == nil {
			dir := secretsDirOf(taskDir)
			if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return nil, fmt.Errorf("secrets directory: %w", err)
			}
			var err error
			if root, err = os.OpenRoot(dir); err != nil {
				return nil, fmt.Errorf("secrets directory: %w", err)
			}
			env = append(env, jobs.SecretsDirEnv+"="+dir)
		}
		if err := writeSecretFile(root, r.File, v); err != nil {
			return nil, err
		}
	}
	return env, nil
}

// writeSecretFile writes one value at a path inside the secrets directory
// (os.Root: nothing escapes it), readable by its owner alone.
func writeSecretFile(root *os.Root, name string, v []byte) error {
	if d := filepath.Dir(name); d != "." {
		if err := root.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("secret file %s: %w", name, err)
		}
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o400)
	if err != nil {
		return fmt.Errorf("secret file %s: %w", name, err)
	}
	_, werr := f.Write(v)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("secret file %s: %w", name, werr)
	}
	return nil
}
