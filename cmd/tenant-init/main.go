// Command tenant-init is the embedded agent's init for a confined
// executor (package tenant): pid 1 of the executor's PID and mount
// namespaces, it sets up the executor's view of the file system, runs
// the executor as its namespace's user and reaps. The scheduler starts
// it; it is small so that it adds little to an executor's start (the
// executor binary can serve instead, slower: it links far more).
package main

import (
	"fmt"
	"os"

	"github.com/ejcloud/elasticjob/engine/mesos/embedded/tenant"
)

func main() {
	tenant.Init() // never returns when started by the agent
	fmt.Fprintln(os.Stderr, "tenant-init: started without "+tenant.EnvPlan+": the scheduler's embedded agent starts it (docs/tenancy.md)")
	os.Exit(2)
}
