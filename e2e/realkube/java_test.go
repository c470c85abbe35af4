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

// jreImageRef is the JRE image the Java test builds (make java-image) and imports.
const jreImageRef = "localhost/elasticjob-jre:e2e"

var jreImage = sync.OnceValue(func() error {
	tmp, err := os.MkdirTemp("", "ej-jre-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	exe := filepath.Join(tmp, "elasticjob-executor")
	build := exec.Command("go", "build", "-trimpath", "-o", exe, "./cmd/executor")
	build.Dir = "../.."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build the static executor: %v\n%s", err, out)
	}
	lib := os.Getenv("EJ_JAVA_JAR")
	if lib == "" {
		lib = filepath.Join(tmp, "lib")
		if out, err := exec.Command("bash", "../../sdk/java/build.sh", lib).CombinedOutput(); err != nil {
			return fmt.Errorf("build the Java library: %v\n%s", err, out)
		}
		lib = filepath.Join(lib, "elasticjob-cloud-executor.jar")
	}
	tarball := filepath.Join(tmp, "jre-image.tar")
	img := exec.Command("go", "run", "./cmd/executor-image", "-ref", jreImageRef, "-executor", exe, "-jre", "openjdk-17-jre-headless",
		"-java-jar", lib, "-o", tarball)
	img.Dir = "../.."
	if out, err := img.CombinedOutput(); err != nil {
		return fmt.Errorf("make java-image: %v\n%s", err, out)
	}
	return importImage(tarball)
})

// TestJavaOnKubernetes: an app naming the JRE image (built here from Debian's
// openjdk-17-jre-headless, as make java-image builds it) runs the manual's MyJob from
// its unchanged tarball, sharded with its parameters, in pods of that image.
func TestJavaOnKubernetes(t *testing.T) {
	requireK8s(t)
	javatest.Need(t)
	if err := jreImage(); err != nil {
		t.Fatal(err)
	}
	tarball, err := os.ReadFile(javatest.Example(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(tarball) }))
	defer srv.Close()
	ns := namespace(t)
	s := startScheduler(t, "scheduler", schedOpts{ns: ns})
	s.must(http.MethodPost, "/api/app", map[string]any{"appName": "my_app", "appURL": srv.URL + "/my-job.tar.gz", "bootstrapScript": "bin/start.sh",
		"cpuCount": 0.1, "memoryMB": 64.0, "appCacheEnable": true, "containerImage": jreImageRef})
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
	if ps := pods(t, ns, "my_job"); len(ps) > 0 && ps[0].Spec.Containers[0].Image != jreImageRef {
		t.Errorf("the pods run %s, want the app's JRE image", ps[0].Spec.Containers[0].Image)
	}
}
