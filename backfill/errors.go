package backfill

import (
	"errors"
	"fmt"

	"github.com/ejcloud/elasticjob/store"
)

// ErrFinal is returned for a control of a backfill that ended.
var ErrFinal = errors.New("backfill: ended")

func errFinal(b Backfill) error {
	return fmt.Errorf("%w: backfill %s is %s", ErrFinal, b.ID, b.State)
}

func errAction(a string) error {
	return fmt.Errorf("%w: action %q (pause, resume or cancel)", ErrInvalid, a)
}

func isConflict(err error) bool { return errors.Is(err, store.ErrConflict) }
