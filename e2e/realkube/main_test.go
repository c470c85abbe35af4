//go:build e2e

package realkube

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ejcloud/elasticjob/e2e/harness"
	"github.com/ejcloud/elasticjob/engine/kube/image"
	"github.com/ejcloud/elasticjob/internal/testbin"
	"github.com/ejcloud/elasticjob/internal/testproxy"
)

// DefaultK8sHome is where the Kubernetes build is looked for without EJ_K8S_HOME: beside
// the repository (relative to this package's directory, the test's working directory).
const DefaultK8sHome = "../../../shared/k8s-1.37"

// executorImage is the executor image the tests import.
const executorImage = "localhost/elasticjob-executor:e2e"

// Set by TestMain.
var (
	k8sHome      string // "" when there is none (every test skips)
	skipReason   string
	schedulerBin string // static, as make build builds it; in the image too
	executorBin  string // idem
	imageBin     string // executor-image, for the Java tests' JRE images
	kubeconfig   string
	k8sBin       string                     // the cluster's binaries (kubectl, ctr, kube-controller-manager), from bin.sh once
	importImage  func(tarball string) error // ctr images import into the node's containerd
	admin        kubernetes.Interface
	rec          *recorder
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	home, err := findK8s()
	if err != nil {
		fmt.Fprintln(os.Stderr, "realkube:", err)
		return 1
	}
	if home == "" {
		skipReason = "skipped: no Kubernetes build at ../shared/k8s-1.37 beside the repository (set EJ_K8S_HOME)"
		fmt.Println("realkube:", skipReason)
		return m.Run()
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "realkube: the kubelet needs root: run the tier as root")
		return 1
	}
	k8sHome = home
	tmp, err := os.MkdirTemp("", "ej-realkube-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "realkube:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	runDir := os.Getenv("EJ_K8S_RUN") // scripts/test.sh passes one, to stop the cluster even if go test is killed
	if runDir == "" {
		runDir = filepath.Join(tmp, "k8s")
	}
	stop := stopper(runDir)
	defer stop()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() { <-sig; stop(); os.Exit(2) }()
	if err := setup(tmp, runDir); err != nil {
		fmt.Fprintln(os.Stderr, "realkube setup:", err)
		return 1
	}
	rec = startRecorder()
	defer rec.close()
	return m.Run()
}

// findK8s returns the build to use, "" when there is none (EJ_K8S_HOME, when set, must name one).
func findK8s() (string, error) {
	return harness.FindBuild("EJ_K8S_HOME", []string{DefaultK8sHome}, "scripts/start.sh", "scripts/stop.sh", "scripts/bin.sh")
}

// stopper returns the function that stops the cluster (once): stop.sh restores the
// kernel settings the kubelet changed.
func stopper(runDir string) func() {
	done := false
	return func() {
		if done || k8sHome == "" {
			return
		}
		done = true
		cmd := exec.Command(filepath.Join(k8sHome, "scripts/stop.sh"))
		cmd.Env = append(os.Environ(), "K8S_RUN="+runDir, "K8S_WIPE=1")
		if os.Getenv("EJ_K8S_KEEP") != "" { // keep the cluster's state and logs for a look
			cmd.Env = append(os.Environ(), "K8S_RUN="+runDir)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "realkube: stop.sh: %v\n%s", err, out)
		}
	}
}

func setup(tmp, runDir string) error {
	// One static scheduler: run on the host by most tests, and in the image (at
	// /elasticjob-scheduler) for the installed one (TestInstalledScheduler).
	dir, err := testbin.Commands("../..", filepath.Join(tmp, "bin"), "scheduler", "executor", "executor-image")
	if err != nil {
		return err
	}
	schedulerBin, executorBin, imageBin = filepath.Join(dir, "scheduler"), filepath.Join(dir, "executor"), filepath.Join(dir, "executor-image")
	for _, b := range []string{schedulerBin, executorBin} { // both go into the image
		if err := testbin.Static(b); err != nil {
			return err
		}
	}
	tarball, err := buildImage(tmp)
	if err != nil {
		return err
	}
	start := exec.Command(filepath.Join(k8sHome, "scripts/start.sh"))
	start.Env = append(os.Environ(), "K8S_RUN="+runDir, "K8S_KCM=0", "K8S_SCHED=1") // kube-scheduler for kube_binding=kube-scheduler
	if out, err := start.CombinedOutput(); err != nil {
		return fmt.Errorf("start.sh: %v\n%s", err, out)
	}
	// bin.sh checks every binary's SHA-256 each time it is called: once here, not per kubectl.
	bin, err := exec.Command(filepath.Join(k8sHome, "scripts/bin.sh")).Output()
	if err != nil {
		return fmt.Errorf("bin.sh: %w", err)
	}
	k8sBin = strings.TrimSpace(string(bin))
	ctr := filepath.Join(k8sBin, "ctr")
	importImage = func(tarball string) error {
		imp := exec.Command(ctr, "-a", filepath.Join(runDir, "containerd/containerd.sock"), "-n", "k8s.io", "images", "import", "--local", tarball)
		if out, err := imp.CombinedOutput(); err != nil {
			return fmt.Errorf("import %s: %v\n%s", tarball, err, out)
		}
		return nil
	}
	if err := importImage(tarball); err != nil {
		return fmt.Errorf("the executor image: %w", err)
	}
	kubeconfig = filepath.Join(runDir, "admin.kubeconfig")
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	if admin, err = kubernetes.NewForConfig(rc); err != nil {
		return err
	}
	if err := waitForDefaultServiceAccount(); err != nil {
		return err
	}
	return warmUp()
}

// warmUp runs one pod to its end first: the kubelet's first pods after its start can be
// lost in its start-up (ContainerStatusUnknown).
func warmUp() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "warm-up-", Namespace: "default"}, Spec: corev1.PodSpec{
		NodeName: "127.0.0.1", RestartPolicy: corev1.RestartPolicyNever, HostNetwork: true,
		Containers: []corev1.Container{{Name: "c", Image: executorImage, ImagePullPolicy: corev1.PullNever, Command: []string{"/bin/true"}}},
	}}
	pods := admin.CoreV1().Pods("default")
	p, err := pods.Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("warm-up pod: %w", err)
	}
	for ctx.Err() == nil {
		got, err := pods.Get(ctx, p.Name, getOpts)
		if err == nil && got.Status.Phase == corev1.PodSucceeded {
			zero := int64(0)
			return pods.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}
		if err == nil && got.Status.Phase == corev1.PodFailed { // the start-up race: once more
			_ = pods.Delete(ctx, p.Name, metav1.DeleteOptions{})
			return warmUp()
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("warm-up pod: %w", ctx.Err())
}

// buildImage packs the image from the static executor as make image does: with the
// scheduler, and the Java library where a JDK is.
func buildImage(tmp string) (string, error) {
	exe := executorBin
	lib := ""
	if _, err := exec.LookPath("javac"); err == nil {
		if lib, err = buildJavaJar(tmp); err != nil {
			return "", err
		}
	}
	list, err := exec.Command("/bin/busybox", "--list").Output()
	if err != nil {
		return "", fmt.Errorf("/bin/busybox --list: %v (apt-get install busybox-static)", err)
	}
	out := filepath.Join(tmp, "executor-image.tar")
	f, err := os.Create(out)
	if err != nil {
		return "", err
	}
	defer f.Close()
	err = image.Write(f, image.Spec{Ref: executorImage, Executor: exe, Scheduler: schedulerBin, Busybox: "/bin/busybox", Applets: strings.Fields(string(list)), JavaJar: lib})
	return out, err
}

// buildJavaJar is the Java library: EJ_JAVA_JAR, else built from sdk/java into dir.
func buildJavaJar(dir string) (string, error) {
	if lib := os.Getenv("EJ_JAVA_JAR"); lib != "" {
		return lib, nil
	}
	out := filepath.Join(dir, "lib")
	if b, err := exec.Command("bash", "../../sdk/java/build.sh", out).CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the Java library: %v\n%s", err, b)
	}
	return filepath.Join(out, "elasticjob-cloud-executor.jar"), nil
}

// waitForDefaultServiceAccount: pods are admitted once the namespace has its service account.
func waitForDefaultServiceAccount() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		if _, err := admin.CoreV1().ServiceAccounts("default").Get(ctx, "default", getOpts); err == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("no default service account: %w", ctx.Err())
}

// requireK8s skips the test with the tier's one message when there is no cluster build.
func requireK8s(t *testing.T) {
	t.Helper()
	if k8sHome == "" {
		t.Skip(skipReason)
	}
}

// requireZK returns EJ_TEST_ZK (testproxy.ZK) for a test of the tier (skipped without the engine).
func requireZK(t *testing.T) string {
	t.Helper()
	requireK8s(t)
	return testproxy.ZK(t)
}
