package scheduler

import (
	"errors"

	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
)

func isNotFound(err error) bool {
	return errors.Is(err, store.ErrNotFound) || errors.Is(err, registry.ErrAppNotFound) || errors.Is(err, registry.ErrJobNotFound)
}
