package api

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/backfill"
	clusterengine "github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/jobs/calendar"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/packages"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/workflow"
	"github.com/gin-gonic/gin"
)

// Errors raised by handlers themselves.
var (
	ErrBadRequest   = errors.New("bad request")
	ErrConflict     = errors.New("conflict")
	ErrTooMany      = errors.New("too many requests")
	ErrUnauthorized = errors.New("unauthorized")
	ErrForbidden    = errors.New("forbidden")
	ErrTooLarge     = errors.New("request body too large")
	// ErrNotSupported: the engine cannot do what is asked (a task's files
	// on Kubernetes).
	ErrNotSupported = errors.New("not supported")
	// ErrUnavailable and ErrNotFound are the cluster engine's own (an engine's
	// missing log is the API's 404).
	ErrUnavailable = clusterengine.ErrUnavailable
	ErrNotFound    = clusterengine.ErrNotFound
)

var statusOf = []struct {
	err  error
	code int
}{
	{app.ErrInvalid, http.StatusBadRequest},
	{jobs.ErrInvalid, http.StatusBadRequest},
	{workflow.ErrInvalid, http.StatusBadRequest},
	{workflow.ErrNotFound, http.StatusNotFound},
	{workflow.ErrRunNotFound, http.StatusNotFound},
	{workflow.ErrExists, http.StatusConflict},
	{workflow.ErrRunFinished, http.StatusConflict},
	{workflow.ErrNotRetryable, http.StatusConflict},
	{workflow.ErrTooManyQueued, http.StatusConflict},
	{ErrBadRequest, http.StatusBadRequest},
	{ErrNotSupported, http.StatusNotImplemented},
	{store.ErrBadPath, http.StatusBadRequest},
	{ErrTooLarge, http.StatusRequestEntityTooLarge},
	{packages.ErrTooLarge, http.StatusRequestEntityTooLarge},
	{packages.ErrChecksum, http.StatusBadRequest},
	{packages.ErrBadHash, http.StatusBadRequest},
	{registry.ErrAppNotFound, http.StatusNotFound},
	{registry.ErrJobNotFound, http.StatusNotFound},
	{registry.ErrCalendarNotFound, http.StatusNotFound},
	{registry.ErrBackfillNotFound, http.StatusNotFound},
	{backfill.ErrInvalid, http.StatusBadRequest},
	{backfill.ErrFinal, http.StatusConflict},
	{calendar.ErrInvalid, http.StatusBadRequest},
	{ErrNotFound, http.StatusNotFound},
	{registry.ErrRunNotFound, http.StatusNotFound},
	{registry.ErrNamespaceNotFound, http.StatusNotFound},
	{registry.ErrNamespaceNotEmpty, http.StatusConflict},
	{namespace.ErrInvalid, http.StatusBadRequest},
	{registry.ErrAppExists, http.StatusConflict},
	{registry.ErrJobExists, http.StatusConflict},
	{ErrConflict, http.StatusConflict},
	{registry.ErrConflict, http.StatusConflict},
	{registry.ErrQueueFull, http.StatusConflict},
	{registry.ErrNotDamaged, http.StatusConflict},
	{registry.ErrBadRepair, http.StatusBadRequest},
	{store.ErrConflict, http.StatusConflict},
	{ErrTooMany, http.StatusTooManyRequests},
	{ErrUnauthorized, http.StatusUnauthorized},
	{ErrForbidden, http.StatusForbidden},
	{ErrUnavailable, http.StatusServiceUnavailable},
	{clusterengine.ErrInvalid, http.StatusBadRequest}, // the cluster engine's
	{registry.ErrFenced, http.StatusServiceUnavailable},
	{store.ErrUnavailable, http.StatusServiceUnavailable},
}

// writeError maps err to a status code and writes {"message": …}. The
// sentinel's own text is stripped so clients see the original's messages
// ("Job 'x' already existed.").
func writeError(c *gin.Context, log *slog.Logger, err error) {
	code := http.StatusInternalServerError
	msg := err.Error()
	for _, s := range statusOf {
		if errors.Is(err, s.err) {
			code = s.code
			msg = strings.TrimPrefix(msg, s.err.Error()+": ")
			break
		}
	}
	if code == http.StatusInternalServerError {
		log.Error("api: internal error", "method", c.Request.Method, "path", c.FullPath(), "err", err)
	}
	if code == http.StatusServiceUnavailable && c.Writer.Header().Get("Retry-After") == "" {
		c.Header("Retry-After", "1") // leadership moving or the registry out of reach: a retry shortly may succeed
	}
	// A caller that used a bearer token gets a Bearer challenge, so a
	// console's expired token never raises the browser's password box.
	if code == http.StatusUnauthorized {
		scheme := "Basic"
		if strings.HasPrefix(c.GetHeader("Authorization"), "Bearer ") {
			scheme = "Bearer"
		}
		c.Header("WWW-Authenticate", scheme+` realm="elasticjob-cloud"`)
	}
	c.Set(ctxError, msg) // for the audit log
	c.AbortWithStatusJSON(code, gin.H{"message": msg})
}
