package java

import (
	"flag"
)

// Options: the java scenario (Java jobs, variants run alternately).
type Options struct {
	javaBefore   string // java: a bin directory of the code before, run alternately with binDir's
	javaVariants string // java: the variants run alternately
	javaDaemon   bool   // java: the DAEMON tick too
}

// Flags registers the family's flags on fs.
func (p *Options) Flags(fs *flag.FlagSet) {
	fs.StringVar(&p.javaBefore, "java-before", "", "java: a bin directory built from the code before (scheduler, executor, elasticjob-cloud-executor.jar), whose jobs run alternately with -bin's: git worktree add /tmp/before <commit> && make -C /tmp/before build")
	fs.StringVar(&p.javaVariants, "java-variants", "after,isolation-off", "java: variants run alternately, comma-separated: after (-bin), isolation-off (-bin with isolation off: the task's JVM outside a cgroup of its own), tuned (-bin with executor_java_opts "+javaTuning+"), relocation-off (-bin with executor_java_opts "+javaNoRelocation+"); before is added with -java-before")
	fs.BoolVar(&p.javaDaemon, "java-daemon", true, "java: also a DAEMON job's ticks (21 s per variant)")
}

// Parse turns what needs it (lists, sizes) into values once the flags are parsed.
func (p *Options) Parse() error { return nil }
