package trace

import (
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/observe"
)

func TestDeadlineTrace(t *testing.T) {
	a := observe.DeadlineAlert{Kind: observe.DeadlineStart, Namespace: "team-a", Job: "etl", Since: time.Unix(100, 0), Due: time.Unix(160, 0), Message: "late"}
	tr := DeadlineTrace(a)
	if tr.JobName != "team-a~etl" || tr.State != StateDeadlineMissed || !strings.HasPrefix(tr.Message, "[start] late") || !tr.CreationTime.Equal(a.Due) {
		t.Fatalf("%+v", tr)
	}
	if DeadlineTrace(a).ID != tr.ID {
		t.Fatal("the same alert got another id")
	}
	b := a
	b.Since = time.Unix(101, 0)
	if DeadlineTrace(b).ID == tr.ID {
		t.Fatal("another alert got the same id")
	}
}
