package api_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/ejcloud/elasticjob/api"
)

func withRemoteAgents() envOpt {
	return func(o *api.Options, _ *api.Credentials) { o.Apps.RejectFileAppURLs = true }
}

// TestFileAppURLRejectedWithRemoteAgents: with agents on other machines a file:// app URL is
// refused at publish and update with a 400 that says why; http(s) URLs are accepted, and
// nothing is stored by a refused request.
func TestFileAppURLRejectedWithRemoteAgents(t *testing.T) {
	e := newEnv(t, withRemoteAgents())
	r := e.request(http.MethodPost, "/api/app", appBody("file_app"))
	e.wantError(r, http.StatusBadRequest, "file:///opt/apps/file_app.tar.gz", "file:// URL", "agents",
		"does not exist", "http(s)", "allow_file_app_urls=true")
	e.wantError(e.request(http.MethodGet, "/api/app/file_app", ""), http.StatusNotFound)

	e.must(http.StatusOK, http.MethodPost, "/api/app",
		`{"appName":"web_app","appURL":"https://repo.example/web_app.tar.gz","bootstrapScript":"bin/start.sh"}`)
	r = e.request(http.MethodPut, "/api/app", `{"appName":"web_app","appURL":"file:///opt/apps/web_app.tar.gz"}`)
	e.wantError(r, http.StatusBadRequest, "file:// URL", "allow_file_app_urls=true")
	got := decode[map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/app/web_app", ""))
	if got["appURL"] != "https://repo.example/web_app.tar.gz" {
		t.Fatalf("refused update changed the app: %v", got)
	}
	e.must(http.StatusOK, http.MethodPut, "/api/app", `{"appName":"web_app","appURL":"http://repo.example/v2.tar.gz"}`)
}

func TestFileAppURLAcceptedOnOneMachine(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("file_app"))
	e.must(http.StatusOK, http.MethodPut, "/api/app", `{"appName":"file_app","appURL":"file:///opt/apps/v2.tar.gz"}`)
}

func TestArtifactsServedWithoutAuth(t *testing.T) {
	srv, f, content := newArtifacts(t)
	e := newEnv(t, withCreds(api.Credentials{AdminUser: "admin", AdminPassword: "pw"}),
		func(o *api.Options, _ *api.Credentials) { o.Files.Artifacts = srv })
	r := e.must(http.StatusOK, http.MethodGet, f.Path(), "")
	if !bytes.Equal(r.Body, content) {
		t.Fatalf("body = %q", r.Body)
	}
	e.must(http.StatusOK, http.MethodHead, f.Path(), "")
	e.wantError(e.request(http.MethodGet, "/api/app/list", ""), http.StatusUnauthorized)
	if r := newEnv(t).request(http.MethodGet, f.Path(), ""); r.Code != http.StatusNotFound {
		t.Fatalf("without Options.Artifacts: %d, want 404", r.Code)
	}
}
