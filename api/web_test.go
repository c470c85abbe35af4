package api_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/ejcloud/elasticjob/api"
)

// With the console served, an unknown path of the API or of the files
// agents download is a JSON 404, never the console's index.html (an agent
// given a mistyped package URL must not save an HTML page as its package);
// other unknown paths are the single-page console.
func TestConsoleNeverAnswersForAgentsFiles(t *testing.T) {
	web := fstest.MapFS{"index.html": {Data: []byte("<html>console</html>")}}
	e := newEnv(t, withPackages(t), func(o *api.Options, _ *api.Credentials) {
		o.Files.Web = web
		o.Files.Artifacts = http.NotFoundHandler()
	})
	for _, p := range []string{"/packages/abc", "/packages/a/b", "/artifacts/executor", "/api/nope"} {
		for _, m := range []string{http.MethodGet, http.MethodHead} {
			r := e.request(m, p, "")
			if r.Code != http.StatusNotFound || strings.Contains(r.String(), "console") {
				t.Errorf("%s %s = %d %s, want a JSON 404", m, p, r.Code, r)
			}
		}
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/jobs/demo", nil))
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "console") {
		t.Errorf("console route = %d %s", w.Code, w.Body)
	}
	// A missing asset is a 404, not index.html served as script.
	for _, p := range []string{"/x.js", "/js/pages/gone.js", "/app.css.map"} {
		w = httptest.NewRecorder()
		e.h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, p, nil))
		if w.Code != http.StatusNotFound || strings.Contains(w.Body.String(), "console") {
			t.Errorf("GET %s = %d %s, want a 404", p, w.Code, w.Body)
		}
	}
}
