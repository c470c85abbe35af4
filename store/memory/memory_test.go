package memory_test

import (
	"testing"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.KV {
		s := memory.New()
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
