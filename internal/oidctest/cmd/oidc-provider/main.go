// Command oidc-provider serves the zitadel example OpenID provider with
// groups (package oidctest) on 127.0.0.1, for the browser tier's console
// SSO test and for trying OIDC login by hand (docs/tenancy.md). Once it
// listens it prints "issuer URL" on stdout.
//
//	oidc-provider -callback http://127.0.0.1:8899/api/oidc/callback \
//	    -client-id elasticjob -client-secret s3cret -groups 'id1=team-pay;id2=interns'
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/ejcloud/elasticjob/internal/oidctest"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	var c oidctest.Client
	flag.StringVar(&c.ID, "client-id", "elasticjob", "the client id")
	flag.StringVar(&c.Secret, "client-secret", "", "the client secret")
	flag.StringVar(&c.Callback, "callback", "", "the client's redirect URI (the scheduler's /api/oidc/callback)")
	groups := flag.String("groups", "", "groups of the users: id=group,group;id=group")
	flag.Parse()
	if c.Secret == "" || c.Callback == "" {
		fmt.Fprintln(os.Stderr, "oidc-provider: -client-secret and -callback are required")
		os.Exit(2)
	}
	gs, err := parseGroups(*groups)
	if err != nil {
		fmt.Fprintln(os.Stderr, "oidc-provider:", err)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "oidc-provider:", err)
		os.Exit(1)
	}
	issuer := "http://" + ln.Addr().String()
	fmt.Println("issuer", issuer)
	if err := http.Serve(ln, oidctest.Handler(issuer, c, gs)); err != nil {
		fmt.Fprintln(os.Stderr, "oidc-provider:", err)
		os.Exit(1)
	}
}

// parseGroups reads "id1=a,b;id2=c".
func parseGroups(s string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, part := range strings.Split(s, ";") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		id, list, ok := strings.Cut(part, "=")
		if !ok || id == "" {
			return nil, fmt.Errorf("-groups: %q is not id=group,group", part)
		}
		out[id] = strings.Split(list, ",")
	}
	return out, nil
}
