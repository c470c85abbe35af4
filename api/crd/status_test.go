package crd

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/api"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestStatusIsWrittenOnlyWhenItChanges(t *testing.T) {
	next := t0.Add(30 * time.Second)
	o := outcome{Generation: 1, Kind: api.DefJob, Name: "hello", Namespace: "default", Def: api.DefinitionStatus{NextFireTime: &next}}
	st, changed := nextStatus(Status{}, o, t0)
	if !changed || st.ObservedGeneration != 1 || st.NextFireTime == nil || !st.NextFireTime.Time.Equal(next) {
		t.Fatalf("first status: %+v changed=%v", st, changed)
	}
	if c := st.Conditions[0]; c.Type != ConditionReady || c.Status != metav1.ConditionTrue || c.ObservedGeneration != 1 || c.Reason != ReasonRegistered {
		t.Errorf("condition %+v", c)
	}
	// The same outcome later (as read back from the API server): nothing to write.
	back := statusOf(mustMap(t, st))
	if _, changed := nextStatus(back, o, t0.Add(time.Minute)); changed {
		t.Error("an unchanged status would be written again")
	}
	// A sub-second difference is no change (times are kept to the second).
	nano := next.Add(300 * time.Millisecond)
	o2 := o
	o2.Def.NextFireTime = &nano
	if _, changed := nextStatus(back, o2, t0.Add(time.Minute)); changed {
		t.Error("a sub-second difference was a change")
	}
	// A new fire time is a change; the condition keeps its transition time.
	later := next.Add(30 * time.Second)
	o2.Def.NextFireTime, o2.Def.LastResult, o2.Def.RunningShards = &later, "SUCCEEDED", 2
	st2, changed := nextStatus(back, o2, t0.Add(time.Minute))
	if !changed || st2.LastResult != "SUCCEEDED" || st2.RunningShards != 2 {
		t.Fatalf("after a run: %+v changed=%v", st2, changed)
	}
	if !st2.Conditions[0].LastTransitionTime.Equal(&st.Conditions[0].LastTransitionTime) {
		t.Errorf("transition time moved: %v -> %v", st.Conditions[0].LastTransitionTime, st2.Conditions[0].LastTransitionTime)
	}
}

func TestRefusedGenerationKeepsTheRunsOfTheOneBefore(t *testing.T) {
	next := t0.Add(30 * time.Second)
	ok := outcome{Generation: 1, Kind: api.DefJob, Name: "hello", Namespace: "default", Def: api.DefinitionStatus{NextFireTime: &next, LastResult: "FAILED"}}
	st, _ := nextStatus(Status{}, ok, t0)
	bad := outcome{Generation: 2, Kind: api.DefJob, Name: "hello", Namespace: "default", Err: errors.New("cron expression '0 61 * * * ?' is invalid"), Invalid: true}
	st2, changed := nextStatus(st, bad, t0.Add(time.Minute))
	if !changed || st2.ObservedGeneration != 2 {
		t.Fatalf("%+v changed=%v", st2, changed)
	}
	c := st2.Conditions[0]
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonInvalid || c.Message != bad.Err.Error() || c.ObservedGeneration != 2 {
		t.Errorf("condition %+v", c)
	}
	if !c.LastTransitionTime.Time.Equal(t0.Add(time.Minute)) {
		t.Errorf("transition time %v, want the refusal's", c.LastTransitionTime)
	}
	if st2.LastResult != "FAILED" || st2.NextFireTime == nil {
		t.Errorf("the registered generation's runs were dropped: %+v", st2)
	}
}

// mustMap is a status as the API server gives it back: JSON decoded.
func mustMap(t *testing.T, st Status) map[string]any {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
