//go:build e2e

package realkube

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ejcloud/elasticjob/internal/javatest"
)

// The JRE images the Java tests build and import: as make java-image builds it (the JRE,
// the executor and the Java library), and an image of a user's own holding a JRE alone.
const (
	jreImageRef   = "localhost/elasticjob-jre:e2e"
	plainImageRef = "localhost/plain-jre:e2e"
)

var jreImages = sync.OnceValue(func() error {
	tmp, err := os.MkdirTemp("", "ej-jre-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	lib, err := buildJavaJar(tmp)
	if err != nil {
		return err
	}
	for _, img := range []struct{ ref, lib string }{{jreImageRef, lib}, {plainImageRef, ""}} {
		tarball := filepath.Join(tmp, "jre-image.tar")
		args := []string{"-ref", img.ref, "-executor", executorBin, "-jre", "openjdk-17-jre-headless", "-o", tarball}
		if img.lib != "" {
			args = append(args, "-java-jar", img.lib)
		}
		cmd := exec.Command(imageBin, args...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("the JRE image %s: %v\n%s", img.ref, err, out)
		}
		if err := importImage(tarball); err != nil {
			return err
		}
	}
	return nil
})

// TestJavaOnKubernetes: an app naming the JRE image (built here from Debian's
// openjdk-17-jre-headless, as make java-image builds it) runs the manual's MyJob from
// its unchanged tarball, sharded with its parameters, in pods of that image; so does an app
// naming an image of its own that holds a JRE and no Java library (the init container
// installs the library from the executor's image beside the executor).
func TestJavaOnKubernetes(t *testing.T) {
	requireK8s(t)
	javatest.Need(t)
	if err := jreImages(); err != nil {
		t.Fatal(err)
	}
	t.Run("the JRE image", func(t *testing.T) { javaInImage(t, jreImageRef) })
	t.Run("an image of your own", func(t *testing.T) { javaInImage(t, plainImageRef) })
}

func javaInImage(t *testing.T, imageRef string) {
	tarball, err := os.ReadFile(javatest.Example(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(tarball) }))
	defer srv.Close()
	ns := namespace(t)
	s := startScheduler(t, "scheduler", schedOpts{ns: ns})
	s.must(http.MethodPost, "/api/app", map[string]any{"appName": "my_app", "appURL": srv.URL + "/my-job.tar.gz", "bootstrapScript": "bin/start.sh",
		"cpuCount": 0.1, "memoryMB": 64.0, "appCacheEnable": true, "containerImage": imageRef})
	s.register(job{"jobName": "my_job", "appName": "my_app", "jobExecutionType": "TRANSIENT", "shardingTotalCount": 3,
		"shardingItemParameters": "0=Beijing,1=Shanghai,2=Guangzhou", "cpuCount": 0.1, "memoryMB": 128.0})
	s.trigger("my_job")
	eventually(t, waitLong, func() bool { return len(s.ended("my_job")) == 3 }, "the three shards to end")
	params := []string{"Beijing", "Shanghai", "Guangzhou"}
	for _, e := range s.ended("my_job") {
		if !e.Success {
			t.Fatalf("%s failed: %s", e.TaskID, deref(e.FailureCause))
		}
		var chunk struct{ Data string }
		if err := json.Unmarshal(s.must(http.MethodGet, "/api/job/logs/"+e.TaskID+"?format=json", nil), &chunk); err != nil {
			t.Fatal(err)
		}
		item := strings.Split(e.TaskID, "@-@")[1]
		n := int(item[0] - '0')
		if want := fmt.Sprintf("MyJob shard %d of 3 parameter=%s", n, params[n]); !strings.Contains(chunk.Data, want) {
			t.Errorf("%s: stdout %q, want %q", e.TaskID, chunk.Data, want)
		}
	}
	if ps := pods(t, ns, "my_job"); len(ps) > 0 && ps[0].Spec.Containers[0].Image != imageRef {
		t.Errorf("the pods run %s, want the app's image %s", ps[0].Spec.Containers[0].Image, imageRef)
	}
}
