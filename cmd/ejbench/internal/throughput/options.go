package throughput

import (
	"flag"
	"time"
)

// Options: the throughput scenario.
type Options struct {
	tputJobs     int
	tputApps     int
	tputRate     int
	tputPaced    int
	tputCronOnly bool
	tputWindow   time.Duration
	tputProfile  bool
}

// Flags registers the family's flags on fs.
func (p *Options) Flags(fs *flag.FlagSet) {
	fs.IntVar(&p.tputJobs, "tput-jobs", 200, "one-shard jobs in the throughput scenario")
	fs.IntVar(&p.tputApps, "tput-apps", 4, "apps (so executors) the throughput jobs are spread over")
	fs.IntVar(&p.tputRate, "tput-rate", 800, "API triggers per second across the throughput jobs (on top of their every-second crons)")
	fs.BoolVar(&p.tputCronOnly, "tput-cron-only", true, "throughput: then the same jobs on their crons alone, without the API trigger stream (CPU per execution without the trigger requests)")
	fs.IntVar(&p.tputPaced, "tput-paced", 300, "throughput: then this many jobs without cron, triggered once a second each, for ready → ACCEPT at that rate (0: skip)")
	fs.DurationVar(&p.tputWindow, "tput-window", 30*time.Second, "throughput measurement window")
	fs.BoolVar(&p.tputProfile, "tput-profile", false, "throughput: CPU-profile the scheduler over the window and print the top of it (go tool pprof)")
}

// Parse turns what needs it (lists, sizes) into values once the flags are parsed.
func (p *Options) Parse() error { return nil }
