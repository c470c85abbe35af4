package executor

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ejcloud/elasticjob/jobs"
)

// Outputs of a shard (workflow nodes pass them downstream; see
// jobs.ParseOutputs): the job may write key=value lines to the file named
// by $ELASTICJOB_OUTPUT, one per task in the task's directory. The
// executor reads it when the run ends and reports the map with the
// terminal status (Report.Outputs). A file over jobs.MaxOutputBytes, or
// with a line that is not key=value, fails a run that had succeeded,
// with the reason; no file means no outputs.

// outputFile is the output file of the task whose directory is dir.
func outputFile(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return filepath.Join(dir, "output")
}

// collectOutputs reads the task's output file into out.
func collectOutputs(dir string, out Outcome) Outcome {
	kv, err := readOutputs(outputFile(dir))
	switch {
	case err != nil && out.State == Finished:
		return Outcome{State: Failed, Message: err.Error(), ExitCode: out.ExitCode}
	case err != nil:
		out.Message += "; and " + err.Error()
	default:
		out.Outputs = kv
	}
	return out
}

func readOutputs(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: open the %s file: %v", jobs.ErrOutput, jobs.OutputEnv, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, jobs.MaxOutputBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: read the %s file: %v", jobs.ErrOutput, jobs.OutputEnv, err)
	}
	if len(b) > jobs.MaxOutputBytes {
		if st, err := f.Stat(); err == nil {
			return nil, fmt.Errorf("%w: the %s file holds %d bytes, more than the %d bytes allowed", jobs.ErrOutput, jobs.OutputEnv, st.Size(), jobs.MaxOutputBytes)
		}
	}
	kv, err := jobs.ParseOutputs(b)
	if err != nil || len(kv) == 0 {
		return nil, err
	}
	return kv, nil
}
