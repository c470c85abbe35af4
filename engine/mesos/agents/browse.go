package agents

import (
	"context"
	"errors"
	"fmt"
	"path"
)

// ErrNotRegular refuses to read a task's log that is not a regular file of its own: the task
// can replace its log in its sandbox, and the agent reads as root.
var ErrNotRegular = errors.New("agents: not a regular file")

// checkRegular refuses a log that a real Mesos agent would open blocking or without end (a
// FIFO, a device, a link to one: the agent's /files process opens a FIFO blocking, and while
// it waits for a writer it answers no file read for any framework) or that is a hard link to
// another file. found false: no such file there. A task can still swap a regular file for a
// FIFO between the listing and the read; the agent's blocking open is Mesos' own
// (docs/tenancy.md, "Threat model").
func (c *Client) checkRegular(ctx context.Context, agentID, file string) (found bool, err error) {
	ls, err := c.Browse(ctx, agentID, path.Dir(file))
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, f := range ls {
		if path.Base(f.Path) != path.Base(file) {
			continue
		}
		if len(f.Mode) == 0 || f.Mode[0] != '-' || f.Nlink > 1 {
			return true, fmt.Errorf("%w: %s is mode %q with %d links", ErrNotRegular, file, f.Mode, f.Nlink)
		}
		return true, nil
	}
	return false, nil
}
