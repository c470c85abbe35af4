package executor

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/internal/javatest"
	"github.com/ejcloud/elasticjob/jobs"
)

// BenchmarkJavaResidentFireToExecute is BenchmarkResidentFireToExecute for a Java DAEMON
// job registered without props (the executor keeps its JVM resident itself): a cron fire
// → the job's execute entered in the resident JVM. Run both in one go:
//
//	go test -run '^$' -bench 'ResidentFire' -benchtime 500x ./executor
func BenchmarkJavaResidentFireToExecute(b *testing.B) {
	jb := javatest.Build(b)
	clk := clock.NewFake(epoch)
	p := newPipeline(b)
	p.Java, p.Clock, p.Grace = Java{Jar: jb.Lib}, clk, 2*time.Second
	url := scriptURL(b, "start.sh", "#!/bin/sh\nexec java -cp "+jb.AppJar+" ejtest.StampJob\n")
	d := startDaemon(b, p, clk, daemonData(url, "start.sh", jobs.Config{}))
	d.fire(b) // the first tick starts the JVM
	out := filepath.Join(p.Sandbox, "tasks", taskID, "stdout")
	stamp := regexp.MustCompile(`exec (\d+)\n`)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		at := nextFire(b, clk)
		t0 := time.Now()
		clk.Set(at)
		if c := d.fireWait(b); !c.Success {
			b.Fatalf("%+v", c)
		}
		buf, _ := os.ReadFile(out)
		m := stamp.FindAllSubmatch(buf, -1)
		ns, _ := strconv.ParseInt(string(m[len(m)-1][1]), 10, 64)
		lat = append(lat, time.Unix(0, ns).Sub(t0))
	}
	reportPercentiles(b, lat)
}
