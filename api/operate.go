package api

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
)

// operateHandlers serve /api/operate and /api/registry: reconciliation, sandboxes, the
// cluster, the replicated store, damaged registry entries; and executors' reports.
type operateHandlers struct {
	*core
	live
	replicated ReplicatedStore
	every      time.Duration // Options.Operate.ReconcileEvery

	mu            sync.Mutex
	lastReconcile map[bool]time.Time

	unnamedReports chan struct{} // the executor reports without a task id header being read
}

// reconcile runs at most once per ReconcileEvery per kind.
func (s *operateHandlers) reconcile(explicit bool) gin.HandlerFunc {
	kind := map[bool]string{true: "explicit", false: "implicit"}[explicit]
	return func(c *gin.Context) {
		ops, err := s.opsOrErr()
		if err != nil {
			writeError(c, s.log, err)
			return
		}
		now := s.clock.Now()
		s.mu.Lock()
		last := s.lastReconcile[explicit]
		if !last.IsZero() && now.Sub(last) < s.every {
			s.mu.Unlock()
			c.Header("Retry-After", strconv.Itoa(int(math.Ceil((s.every - now.Sub(last)).Seconds()))))
			writeError(c, s.log, fmt.Errorf("%w: Repeat %s reconcile task in less than %v.", ErrTooMany, kind, s.every))
			return
		}
		s.lastReconcile[explicit] = now
		s.mu.Unlock()
		if err := ops.Reconcile(c, explicit); err != nil {
			writeError(c, s.log, fmt.Errorf("%w: reconcile: %v", ErrUnavailable, err))
			return
		}
		c.Status(http.StatusNoContent)
	}
}

func (s *operateHandlers) sandbox(c *gin.Context) {
	name := c.Query("appName")
	if name == "" {
		writeError(c, s.log, fmt.Errorf("%w: the appName query parameter is required", ErrBadRequest))
		return
	}
	if err := validName("appName", name); err != nil { // before it becomes a store path
		writeError(c, s.log, err)
		return
	}
	if _, err := s.regIn(c).Config().App(c, name); err != nil {
		writeError(c, s.log, err)
		return
	}
	eng, err := s.engineOrErr()
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	found, err := eng.Sandboxes(c, keyOf(c, name))
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	boxes := make([]Sandbox, 0, len(found))
	for _, b := range found {
		boxes = append(boxes, Sandbox{Hostname: b.Hostname, AgentID: b.AgentID, ExecutorID: b.ExecutorID, Path: b.Path})
	}
	c.JSON(http.StatusOK, boxes)
}

func (s *operateHandlers) clusterView(c *gin.Context) {
	ops, err := s.opsOrErr()
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	v, err := ops.Cluster(c)
	if err == nil {
		v, err = redactorOf(c).tree(v) // the pods of namespaces the caller has no role in: another namespace's work
	}
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	c.JSON(http.StatusOK, v)
}
