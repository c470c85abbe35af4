package crd

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Status is an object's status subresource.
type Status struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	LastFireTime       *metav1.Time       `json:"lastFireTime,omitempty"`
	NextFireTime       *metav1.Time       `json:"nextFireTime,omitempty"`
	LastResult         string             `json:"lastResult,omitempty"`
	LastFailure        string             `json:"lastFailure,omitempty"`
	RunningShards      int                `json:"runningShards,omitempty"`
	ActiveRuns         int                `json:"activeRuns,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// ConditionReady is the condition saying whether the definition is
// registered as the object's generation says.
const ConditionReady = "Ready"

// Reasons of the Ready condition.
const (
	ReasonRegistered = "Registered" // True
	ReasonInvalid    = "Invalid"    // False: the scheduler refuses the spec (its message)
	ReasonFailed     = "Failed"     // False: the registry could not be written (retried)
)

// outcome is what reconciling an object's generation came to.
type outcome struct {
	Generation int64
	Kind, Name string // the kind's definition and its name, for the message
	Namespace  string
	Err        error // nil: registered
	Invalid    bool  // Err is the API's refusal (else a failure to retry)
	Def        api.DefinitionStatus
}

// nextStatus is the status an object gets from cur (its status now) and
// what reconciling it came to, and whether it differs from cur: unchanged
// fields keep their values (the Ready condition its transition time), so a
// status written back only when changed makes no churn.
func nextStatus(cur Status, o outcome, now time.Time) (Status, bool) {
	next := Status{ObservedGeneration: o.Generation, Conditions: append([]metav1.Condition(nil), cur.Conditions...)}
	cond := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: o.Generation,
		Reason: ReasonRegistered, Message: fmt.Sprintf("registered as %s '%s' in namespace '%s'", o.Kind, o.Name, o.Namespace),
		LastTransitionTime: metav1.NewTime(now.UTC().Truncate(time.Second))}
	switch {
	case o.Err != nil && o.Invalid:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonInvalid, o.Err.Error()
	case o.Err != nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonFailed, o.Err.Error()
	}
	meta.SetStatusCondition(&next.Conditions, cond)
	if o.Err == nil {
		next.LastFireTime, next.NextFireTime = mtime(o.Def.LastFireTime), mtime(o.Def.NextFireTime)
		next.LastResult, next.LastFailure = o.Def.LastResult, o.Def.LastFailure
		next.RunningShards, next.ActiveRuns = o.Def.RunningShards, o.Def.ActiveRuns
	} else { // the runs of the generation registered before go on: keep what it said of them
		next.LastFireTime, next.NextFireTime, next.LastResult, next.LastFailure = cur.LastFireTime, cur.NextFireTime, cur.LastResult, cur.LastFailure
		next.RunningShards, next.ActiveRuns = cur.RunningShards, cur.ActiveRuns
	}
	a, _ := json.Marshal(cur)
	b, _ := json.Marshal(next)
	return next, string(a) != string(b)
}

func mtime(t *time.Time) *metav1.Time {
	if t == nil {
		return nil
	}
	m := metav1.NewTime(t.UTC().Truncate(time.Second))
	return &m
}

// statusOf reads an object's status (zero when it has none or it cannot
// be read: it is then written whole).
func statusOf(raw map[string]any) Status {
	var s Status
	if raw == nil {
		return s
	}
	b, err := json.Marshal(raw)
	if err == nil {
		_ = json.Unmarshal(b, &s)
	}
	return s
}
