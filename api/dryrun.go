package api

import (
	"fmt"
	"strconv"

	"github.com/gin-gonic/gin"
)

// dryRunParam reads ?dryRun=true on the routes that create or update an
// app or a job: the body is decoded and checked as it would be (fields,
// cron, calendar, secrets, fit, pod template) and answered, but nothing
// is written. ejctl apply checks every change so before it makes any.
func dryRunParam(c *gin.Context) (bool, error) {
	v := c.Query("dryRun")
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%w: dryRun must be true or false, got %q", ErrBadRequest, v)
	}
	return b, nil
}
