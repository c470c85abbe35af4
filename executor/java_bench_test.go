package executor

import (
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
	benchTicks(b, p, clk, d)
}
