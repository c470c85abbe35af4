package api

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/gin-gonic/gin"
)

// Bounds of GET /api/job/logs/{taskId}.
const (
	maxLogBytes   = 64 << 20  // the most one answer carries (full=true, any range)
	defaultLogLen = 64 << 10  // tail and length when not given
	maxLogLines   = 1_000_000 // lines=N
)

// logQuery is what GET /api/job/logs/{taskId} asks for: one range (the
// first given of full=true, offset/length, lines=N, tail=N) and one format
// (json or text), chosen independently of each other.
type logQuery struct {
	stream         string
	offset, length int64 // a negative offset counts from the end
	lines          int   // > 0: the last lines, read by growing tails
	json           bool
}

// taskLog serves a task's stdout or stderr. Every range answers in the
// same format: JSON (LogChunk) when ?format=json or the Accept header asks
// for application/json (the console and ejctl do), else the bytes as
// text/plain with the chunk's facts in X-Log-* headers (curl, a browser).
func (s *runHandlers) taskLog(c *gin.Context) {
	q, err := parseLogQuery(c)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	eng, err := s.engineOrErr()
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	taskID := c.Param("taskId")
	if err := s.launchedTask(c, taskID); err != nil {
		writeError(c, s.log, err)
		return
	}
	var chunk LogChunk
	if q.lines > 0 {
		chunk, err = lastLines(c, eng, taskID, q.stream, q.lines)
	} else {
		chunk, err = readLog(c, eng, taskID, q.stream, q.offset, q.length)
	}
	if err != nil {
		writeError(c, s.log, s.noLogWhy(c, taskID, q.stream, err))
		return
	}
	if q.json {
		c.JSON(http.StatusOK, chunk)
		return
	}
	h := c.Writer.Header()
	h.Set("X-Log-Task", chunk.TaskID)
	h.Set("X-Log-Stream", chunk.Stream)
	h.Set("X-Log-Offset", strconv.FormatInt(chunk.Offset, 10))
	h.Set("X-Log-Size", strconv.FormatInt(chunk.Size, 10))
	c.Data(http.StatusOK, "text/plain; charset=utf-8", []byte(chunk.Data))
}

func parseLogQuery(c *gin.Context) (logQuery, error) {
	q := logQuery{stream: c.DefaultQuery("stream", "stdout")}
	if q.stream != "stdout" && q.stream != "stderr" {
		return q, fmt.Errorf("%w: stream must be stdout or stderr", ErrBadRequest)
	}
	switch f := c.Query("format"); f {
	case "json":
		q.json = true
	case "text":
	case "":
		q.json = acceptsJSON(c.GetHeader("Accept"))
	default:
		return q, fmt.Errorf("%w: format must be json or text, got %q", ErrBadRequest, f)
	}
	num := func(k string, def int64) (int64, error) {
		v := c.Query(k)
		if v == "" {
			return def, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%w: %s must be a non-negative number", ErrBadRequest, k)
		}
		return n, nil
	}
	var err error
	switch full := c.Query("full"); {
	case full != "" && full != "true" && full != "false":
		return q, fmt.Errorf("%w: full must be true or false", ErrBadRequest)
	case full == "true":
		q.offset, q.length = 0, maxLogBytes
	case c.Query("offset") != "":
		if q.offset, err = num("offset", 0); err != nil {
			return q, err
		}
		q.length, err = num("length", defaultLogLen)
		q.length = min(q.length, maxLogBytes)
	case c.Query("lines") != "":
		var n int64
		if n, err = num("lines", 0); err == nil && (n < 1 || n > maxLogLines) {
			err = fmt.Errorf("%w: lines must be between 1 and %d", ErrBadRequest, maxLogLines)
		}
		q.lines = int(n)
	default:
		var tail int64
		tail, err = num("tail", defaultLogLen)
		q.offset, q.length = -min(tail, maxLogBytes), min(tail, maxLogBytes)
	}
	return q, err
}

// acceptsJSON reports whether an Accept header names application/json
// (with a non-zero weight) before or instead of text/plain.
func acceptsJSON(accept string) bool {
	for part := range strings.SplitSeq(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || params["q"] == "0" {
			continue
		}
		switch mt {
		case "application/json":
			return true
		case "text/plain":
			return false
		}
	}
	return false
}

// readLog reads a piece of a task's log from the engine (engine.Logs.TaskLog) as the API
// answers it.
func readLog(ctx context.Context, logs engine.Logs, taskID, stream string, offset, length int64) (LogChunk, error) {
	c, err := logs.TaskLog(ctx, taskID, stream, offset, length)
	if err != nil {
		return LogChunk{}, err
	}
	return LogChunk{TaskID: taskID, Stream: stream, Offset: c.Offset, Size: c.Size, Data: c.Data}, nil
}

// lastLines reads growing tails of the log until they hold n lines (or
// the whole file, or maxLogBytes) and keeps the last n: a final line
// without its newline counts as a line.
func lastLines(c *gin.Context, logs engine.Logs, taskID, stream string, n int) (LogChunk, error) {
	window := int64(defaultLogLen)
	for {
		chunk, err := readLog(c, logs, taskID, stream, -window, window)
		if err != nil {
			return chunk, err
		}
		cut, ok := cutLines(chunk.Data, n)
		if ok || chunk.Offset <= 0 || window >= maxLogBytes {
			chunk.Offset += int64(cut)
			chunk.Data = chunk.Data[cut:]
			return chunk, nil
		}
		window = min(window*4, maxLogBytes)
	}
}

// cutLines returns where the last n lines of data begin, and whether
// data held more than n of them (so the cut is known to be at a line
// start); otherwise 0 and false.
func cutLines(data string, n int) (int, bool) {
	end := len(data)
	if strings.HasSuffix(data, "\n") {
		end-- // the last line's own newline
	}
	for i := end - 1; i >= 0; i-- {
		if data[i] == '\n' {
			if n--; n == 0 {
				return i + 1, true
			}
		}
	}
	return 0, false
}

// noLogWhy words a missing log of a task that ended before it wrote one
// (its app could not be fetched, its executor never started it): the
// cause that ended it, from history, instead of "the sandbox may have
// been removed". Other errors are kept.
func (s *runHandlers) noLogWhy(c *gin.Context, taskID, stream string, err error) error {
	if !errors.Is(err, ErrNotFound) {
		return err
	}
	tid, perr := jobs.ParseTaskID(taskID)
	if perr != nil {
		return err
	}
	v := taskView{TaskID: taskID, JobName: tid.JobName, ShardingItem: tid.Item, AgentID: tid.AgentID}
	found, herr := s.taskHistory(c, &v)
	if herr != nil || v.Running {
		return err
	}
	if !found {
		// Not in history: unknown unless it runs (the engine's answer
		// then speaks of its agent, "not registered with the master").
		if s.hist == nil {
			return err
		}
		if running, rerr := s.runningTask(c, &v); rerr != nil || running {
			return err
		}
		return fmt.Errorf("%w: task %s is unknown: it is not running and history has no record of it", ErrNotFound, taskID)
	}
	cause := v.FailureCause
	if cause == "" {
		cause = v.Message
	}
	failed := (v.Success != nil && !*v.Success) || v.State.Failure()
	if cause == "" || !failed {
		return err
	}
	return fmt.Errorf("%w: task %s has no %s: it ended %s before writing any: %s", ErrNotFound, taskID, stream, v.State, cause)
}
