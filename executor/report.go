package executor

import (
	"encoding/json"
	"net"
	"os"
	"time"
)

// Report is the JSON the executor attaches to TaskStatus.data on
// TASK_RUNNING (hostname, ip, startTime) and on terminal updates (plus
// completeTime, when the process exited exitCode, and the task's outputs). The scheduler turns
// it into the execution log (history/trace): the executor reports through
// the scheduler and never writes to the trace database, so no database
// credentials are ever shipped to agents.
//
// TASK_RUNNING also carries when the executor received the LAUNCH
// (launchTime) and, for a forked process, when it began starting it
// (forkTime; startTime is when the start returned): the scheduler's
// launch-path stage metrics (metrics.Stages) split a launch with them.
type Report struct {
	Hostname     string     `json:"hostname"`
	IP           string     `json:"ip"`
	LaunchTime   *time.Time `json:"launchTime,omitempty"`
	ForkTime     *time.Time `json:"forkTime,omitempty"`
	StartTime    *time.Time `json:"startTime,omitempty"`
	CompleteTime *time.Time `json:"completeTime,omitempty"`
	ExitCode     *int       `json:"exitCode,omitempty"`
	// Outputs are what the task wrote to $ELASTICJOB_OUTPUT (terminal
	// updates only); the scheduler keeps them in the run's record.
	Outputs map[string]string `json:"outputs,omitempty"`
}

func (r Report) marshal() []byte {
	b, _ := json.Marshal(r) // plain data: cannot fail
	return b
}

// hostIdentity returns this host's name and the address to report:
// LIBPROCESS_IP when Mesos set it, else the first non-loopback unicast
// address (IPv4 preferred), else 127.0.0.1.
func hostIdentity() (hostname, ip string) {
	hostname, _ = os.Hostname()
	if v := os.Getenv("LIBPROCESS_IP"); v != "" && v != "0.0.0.0" {
		return hostname, v
	}
	addrs, _ := net.InterfaceAddrs()
	var v6 string
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.IsLoopback() || !n.IP.IsGlobalUnicast() {
			continue
		}
		if n.IP.To4() != nil {
			return hostname, n.IP.String()
		}
		if v6 == "" {
			v6 = n.IP.String()
		}
	}
	if v6 != "" {
		return hostname, v6
	}
	return hostname, "127.0.0.1"
}
