package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/ejcloud/elasticjob/workflow"
	"github.com/gin-gonic/gin"
)

// ForcedDelete answers a deregistration or an app deletion sent with
// ?force=true that went ahead although workflows run the jobs it removed:
// it names them, since their next runs fail until they are updated.
type ForcedDelete struct {
	Message   string         `json:"message"`
	Workflows []workflow.Use `json:"workflows"`
}

// forceParam reads ?force= (absent: false).
func forceParam(c *gin.Context) (bool, error) {
	v := c.Query("force")
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%w: force must be true or false, got %q", ErrBadRequest, v)
	}
	return b, nil
}

// checkUnused refuses (409) to delete what workflows use unless force is
// set; what names it ("job 'x'", "app 'y' (its jobs a, b)"). It returns
// the workflows a forced delete breaks.
func (s *core) checkUnused(ctx context.Context, force bool, what string, jobs []string) ([]workflow.Use, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	uses, err := s.regIn(ctx).Flows().WorkflowUses(ctx, jobs...)
	if err != nil || len(uses) == 0 || force {
		return uses, err
	}
	return nil, fmt.Errorf("%w: %s is used by %s: update those workflows (PUT /api/workflow) or delete them first, "+
		"or repeat with ?force=true to delete it anyway, and their next runs fail", ErrConflict, what, workflow.DescribeUses(uses))
}

// deleted answers a successful delete: 204, or 200 with the workflows a
// forced delete broke.
func deleted(c *gin.Context, what string, broken []workflow.Use) {
	if len(broken) == 0 {
		c.Status(http.StatusNoContent)
		return
	}
	c.JSON(http.StatusOK, ForcedDelete{
		Message: fmt.Sprintf("%s was deleted although %s ran it: their next runs fail until they are updated",
			what, workflow.DescribeUses(broken)),
		Workflows: broken,
	})
}
