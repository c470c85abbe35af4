package jobs

import "strconv"

// ScriptJobClass is the jobClass Elastic-Job-Cloud 2.x wrote for its SCRIPT
// jobs: a marker of the type, not a class to run.
const ScriptJobClass = "com.dangdang.ddframe.job.api.script.ScriptJob"

// Legacy2x holds the fields of a 2.x job (its register body and its stored
// Gson JSON) that are not Config's: streamingProcess (a DATAFLOW job's) and
// scriptCommandLine (a SCRIPT job's). nil: the field was absent.
type Legacy2x struct {
	Streaming *bool
	Script    *string
}

// Apply maps the 2.x fields onto c: streamingProcess becomes
// props["streaming.process"], scriptCommandLine props["script.command.line"],
// and the SCRIPT jobs' ScriptJobClass is no class. The props are a copy:
// a map c shares is never changed in place.
func (l Legacy2x) Apply(c *Config) {
	if c.JobClass == ScriptJobClass {
		c.JobClass = ""
	}
	if l.Streaming == nil && l.Script == nil {
		return
	}
	props := make(map[string]string, len(c.Props)+2)
	for k, v := range c.Props {
		props[k] = v
	}
	if l.Streaming != nil {
		props["streaming.process"] = strconv.FormatBool(*l.Streaming)
	}
	if l.Script != nil {
		props["script.command.line"] = *l.Script
	}
	c.Props = props
}
