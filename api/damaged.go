package api

import (
	"fmt"
	"net/http"

	"github.com/ejcloud/elasticjob/registry"
	"github.com/gin-gonic/gin"
)

// The registry's damaged entries (registry/damage.go): stored values that
// do not decode, set aside so the rest keeps scheduling. Anyone lists
// those of the namespaces it has a role in (the admin every one, the
// scheduler's own entries too); the admin removes or replaces one by its
// store path.
const damagedRoute = "/api/registry/damaged"

// listDamaged answers the entries set aside: those this instance met, each
// read again (removed and repaired ones leave the list), or with
// scan=true every record of the registry walked and decoded.
func (s *operateHandlers) listDamaged(c *gin.Context) {
	var all []registry.Damaged
	var err error
	if c.Query("scan") == "true" {
		all, err = s.reg.Scan(c)
	} else if err = s.reg.Recheck(c); err == nil {
		all = s.reg.Damage().List()
	}
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	p := principal(c)
	out := []registry.Damaged{}
	for _, d := range all {
		if d.Namespace == "" && !p.Admin {
			continue // the scheduler's own entries: the admin's
		}
		if _, ok := p.RoleIn(d.Namespace); ok {
			out = append(out, d)
		}
	}
	c.JSON(http.StatusOK, out)
}

func damagedPath(c *gin.Context) (string, error) {
	p := c.Query("path")
	if p == "" {
		return "", fmt.Errorf("%w: give the damaged entry's store path: ?path=/config/app/x", ErrBadRequest)
	}
	return p, nil
}

func (s *operateHandlers) removeDamaged(c *gin.Context) {
	p, err := damagedPath(c)
	if err == nil {
		err = s.reg.RemoveDamaged(c, p)
	}
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// repairDamaged replaces a damaged entry with the request's body, the
// value as it is to be stored (an app's or a job's JSON as GET answers
// it, with names as the namespace knows them).
func (s *operateHandlers) repairDamaged(c *gin.Context) {
	p, err := damagedPath(c)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	body, err := readBody(c, s.maxBody)
	if err == nil {
		err = s.reg.RepairDamaged(c, p, body)
	}
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	c.Status(http.StatusNoContent)
}
