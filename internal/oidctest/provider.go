// Package oidctest runs the zitadel example OpenID provider
// (github.com/zitadel/oidc/v3/example/server), a real OIDC server, with a
// groups claim in its ID tokens: the tests of OIDC login (api, the browser
// tier) sign in through it on 127.0.0.1. Its users are the example's:
// test-user@<issuer host> (id1) and test-user2@<issuer host> (id2), password
// Password.
package oidctest

import (
	"context"
	"net/http"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Password is every example user's password.
const Password = "verysecure"

// groupsStorage is the example's storage with each user's groups added to
// its ID tokens and user info (the example's users have none).
type groupsStorage struct {
	*storage.Storage
	groups map[string][]string // user id → groups
}

func (s groupsStorage) SetUserinfoFromRequest(ctx context.Context, ui *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, ui, req, scopes); err != nil {
		return err
	}
	ui.AppendClaims("groups", s.groups[req.GetSubject()])
	return nil
}

// Client is the one web client the provider knows.
type Client struct {
	ID, Secret string
	Callback   string // its only redirect URI
}

// Handler is the provider at issuer (the URL it is served at), with one
// client and groups per user id ("id1", "id2").
func Handler(issuer string, c Client, groups map[string][]string) http.Handler {
	clients := map[string]*storage.Client{c.ID: storage.WebClient(c.ID, c.Secret, c.Callback)}
	st := groupsStorage{storage.NewStorageWithClients(storage.NewUserStore(issuer), clients), groups}
	return exampleop.SetupServer(issuer, st, nil, false)
}
