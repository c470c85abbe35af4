package api

import (
	"fmt"
	"net/http"
	"path"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/internal/safeopen"
)

// maxDownload bounds one file downloaded by GET
// /api/job/tasks/{taskId}/files/download (as a full log read is).
const maxDownload = maxLogBytes

// taskFilesOf is the engine's optional TaskFiles, or why not.
func (s *runHandlers) taskFilesOf() (Engine, engine.TaskFiles, error) {
	eng, err := s.engineOrErr()
	if err != nil {
		return nil, nil, err
	}
	tf, ok := eng.(engine.TaskFiles)
	if !ok {
		return nil, nil, fmt.Errorf("%w: this engine does not list a task's files (the Mesos engines do; on Kubernetes read them with kubectl while the pod exists)", ErrNotSupported)
	}
	return eng, tf, nil
}

// relPath is the ?path= of a task's files route: a clean relative path
// in the task's directory ("" for the directory itself when dir).
func relPath(c *gin.Context, dir bool) (string, error) {
	p := c.Query("path")
	if p == "" && dir {
		return "", nil
	}
	if err := safeopen.Valid(p); err != nil || p == "." {
		return "", fmt.Errorf("%w: path must be a clean relative path in the task's directory (like work/report.txt), got %q", ErrBadRequest, p)
	}
	return p, nil
}

// taskFiles serves GET /api/job/tasks/{taskId}/files?path=DIR: the
// entries of a directory of a task the scheduler launched in the
// request's namespace (its own directory without path): its stdout,
// stderr and work/ ($ELASTICJOB_TASK_DIR).
func (s *runHandlers) taskFiles(c *gin.Context) {
	taskID := c.Param("taskId")
	dir, err := relPath(c, true)
	if err == nil {
		err = s.launchedTask(c, taskID)
	}
	var tf engine.TaskFiles
	if err == nil {
		_, tf, err = s.taskFilesOf()
	}
	var files []engine.TaskFile
	if err == nil {
		files, err = tf.TaskFiles(c, taskID, dir)
	}
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"taskId": taskID, "path": dir, "files": files})
}

// taskFileDownload serves GET /api/job/tasks/{taskId}/files/download?path=
// FILE: a regular file of the task's directory, read as its logs are
// (the agent opens it without following links), up to maxDownload bytes.
func (s *runHandlers) taskFileDownload(c *gin.Context) {
	taskID := c.Param("taskId")
	p, err := relPath(c, false)
	if err == nil {
		err = s.launchedTask(c, taskID)
	}
	var eng Engine
	if err == nil {
		eng, _, err = s.taskFilesOf()
	}
	var data []byte
	if err == nil {
		data, err = readWhole(c, eng, taskID, p)
	}
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	c.Header("Content-Disposition", "attachment; filename="+strconv.Quote(path.Base(p)))
	c.Header("X-Content-Type-Options", "nosniff")
	c.Data(http.StatusOK, "application/octet-stream", data)
}

// readWhole reads a task's file in the pieces the agent serves (a MiB
// each), refusing one larger than maxDownload.
func readWhole(c *gin.Context, logs engine.Logs, taskID, p string) ([]byte, error) {
	var out []byte
	for {
		chunk, err := logs.TaskLog(c, taskID, p, int64(len(out)), maxDownload)
		if err != nil {
			return nil, err
		}
		if chunk.Size > maxDownload {
			return nil, fmt.Errorf("%w: %s is %d bytes, more than the %d a download carries", ErrBadRequest, p, chunk.Size, maxDownload)
		}
		out = append(out, chunk.Data...)
		if chunk.Data == "" || int64(len(out)) >= chunk.Size {
			return out, nil
		}
	}
}
