package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretFile: with --secret-file the master's APIs and reads require HTTP Basic
// --principal and that secret; a secret file others may read is refused.
func TestSecretFile(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("local-s3cret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"--port", "0", "--work-dir", filepath.Join(dir, "w0"), "--secret-file", secret},
		&bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a readable secret file: %v", err)
	}
	if err := os.Chmod(secret, 0o600); err != nil {
		t.Fatal(err)
	}
	in := start(t, "--port", "0", "--work-dir", filepath.Join(dir, "w1"), "--secret-file", secret, "--principal", "ops")
	get := func(user, pass string) int {
		req, _ := http.NewRequest(http.MethodGet, in.url+"/state", nil)
		if pass != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("", ""); code != http.StatusUnauthorized {
		t.Errorf("/state without a credential: %d", code)
	}
	if code := get("elasticjob", "local-s3cret"); code != http.StatusUnauthorized {
		t.Errorf("/state with another principal: %d", code)
	}
	if code := get("ops", "local-s3cret"); code != http.StatusOK {
		t.Errorf("/state with the credential: %d", code)
	}
}
