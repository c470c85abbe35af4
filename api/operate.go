package api

import (
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
)

func (s *Server) operateRoutes(g *gin.RouterGroup) {
	g.POST("/reconcile/explicit", s.reconcile(true))
	g.POST("/reconcile/implicit", s.reconcile(false))
	g.GET("/sandbox", s.sandbox)
	g.GET("/cluster", s.clusterView)
	g.POST("/secrets/reseal", s.resealSecrets)
}

// reconcile runs at most once per ReconcileEvery per kind.
func (s *Server) reconcile(explicit bool) gin.HandlerFunc {
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

func (s *Server) sandbox(c *gin.Context) {
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

func (s *Server) clusterView(c *gin.Context) {
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
