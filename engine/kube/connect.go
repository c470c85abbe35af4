package kube

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Connection says how the scheduler reaches the Kubernetes API server.
type Connection struct {
	Kubeconfig string // kube_config: a kubeconfig file
	InCluster  bool   // kube_in_cluster: the pod's service account
	QPS        float32
	Burst      int
}

// Clients are the scheduler's Kubernetes clients: the typed one (pods, nodes, events) and
// the dynamic one (the definitions' objects, package crd).
type Clients struct {
	Typed   kubernetes.Interface
	Dynamic dynamic.Interface
	// Account is the scheduler's own service account, "namespace/name", when its
	// credentials are one's token ("": a user's certificate or token, or unknown):
	// Config.SchedulerAccount.
	Account string
}

// Connect makes the clients of c. Built-in types travel as protobuf (the informers decode
// every pod of the cluster) and the watches uncompressed (inflating them was the largest
// part of the informers' CPU: docs/benchmarks.md).
func Connect(c Connection) (Clients, error) {
	var rc *rest.Config
	var err error
	if c.InCluster {
		rc, err = rest.InClusterConfig()
	} else {
		rc, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	}
	if err != nil {
		return Clients{}, fmt.Errorf("kubernetes: %w", err)
	}
	rc.UserAgent = "elasticjob-scheduler"
	rc.ContentType, rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf,application/json"
	rc.DisableCompression = true
	rc.QPS, rc.Burst = c.QPS, c.Burst
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return Clients{}, fmt.Errorf("kubernetes: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return Clients{}, fmt.Errorf("kubernetes: %w", err)
	}
	return Clients{Typed: cs, Dynamic: dyn, Account: tokenAccount(rc)}, nil
}

// tokenAccount is the service account rc's bearer token is of, "namespace/name", read
// from the token's subject claim (system:serviceaccount:NS:NAME); "" for any other
// credential. The token is not verified: it names the account to keep from the tasks,
// and a token that lies about its subject only fails its own requests.
func tokenAccount(rc *rest.Config) string {
	tok := rc.BearerToken
	if tok == "" && rc.BearerTokenFile != "" {
		b, err := os.ReadFile(rc.BearerTokenFile)
		if err != nil {
			return ""
		}
		tok = strings.TrimSpace(string(b))
	}
	return jwtAccount(tok)
}

// jwtAccount is the service account a JWT's subject names; "" when it names none.
func jwtAccount(tok string) string {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return ""
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	if json.Unmarshal(payload, &claims) != nil {
		return ""
	}
	rest, ok := strings.CutPrefix(claims.Sub, "system:serviceaccount:")
	ns, name, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || ns == "" || name == "" || strings.Contains(name, ":") {
		return ""
	}
	return ns + "/" + name
}
