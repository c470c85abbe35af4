package conformance

import (
	"io"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
)

// The recorder reads a job's reports in order, from the file host runs append to and from
// what pods post, and serves the app whose script reports the way the engine declares.
func TestRecorder(t *testing.T) {
	r := newRecorder(t, ReportFile)
	lines := "start j@-@0@-@READY@-@a@-@1\nstart other@-@0@-@READY@-@a@-@2\nstart j@-@1@-@READY@-@a@-@3\nend j@-@0@-@READY@-@a@-@1\n"
	if err := os.WriteFile(r.file, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(r.srv.URL+"/event", "text/plain", strings.NewReader("end j@-@1@-@READY@-@a@-@3"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := []event{{"start", "j@-@0@-@READY@-@a@-@1"}, {"start", "j@-@1@-@READY@-@a@-@3"}, {"end", "j@-@0@-@READY@-@a@-@1"}, {"end", "j@-@1@-@READY@-@a@-@3"}}
	if got := r.events("j"); !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if r.count("j", "end") != 2 || !reflect.DeepEqual(r.tasks("j", "start"), []string{"j@-@0@-@READY@-@a@-@1", "j@-@1@-@READY@-@a@-@3"}) {
		t.Fatalf("count %d tasks %v", r.count("j", "end"), r.tasks("j", "start"))
	}
	if !strings.Contains(r.script(ReportFile), ">> "+r.file) || !strings.Contains(r.script(ReportHTTP), "wget -q -O /dev/null --post-data") ||
		!strings.Contains(r.script(ReportHTTP), r.srv.URL+"/event") {
		t.Fatalf("scripts:\n%s\n%s", r.script(ReportFile), r.script(ReportHTTP))
	}
	resp, err = http.Get(r.appURL())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(body) == 0 {
		t.Fatalf("app: %d, %d bytes", resp.StatusCode, len(body))
	}
}

// A skip must name a case of the table and say why.
func TestKnownCases(t *testing.T) {
	for _, c := range Cases {
		if !known(c.Name) {
			t.Errorf("%s unknown", c.Name)
		}
	}
	if known("teleport") {
		t.Error("a case not in the table is known")
	}
}
