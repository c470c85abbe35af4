package executor

import (
	"encoding/json"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/encoding"
	"github.com/mesos/mesos-go/api/v1/lib/encoding/codecs"
	mjson "github.com/mesos/mesos-go/api/v1/lib/encoding/json"
	"github.com/mesos/mesos-go/api/v1/lib/executor"

	"github.com/ejcloud/elasticjob/internal/mesosframe"
)

// jsonCodec is mesos-go's JSON codec with a tolerant event decoder: a real
// agent's JSON may hold enum values or fields newer than the v1 protos
// (SPEC.md §9). When strict decoding fails, the event is decoded part by
// part, keeping what the executor needs (type, task id, data, kill policy,
// ack uuid) and dropping the rest.
var jsonCodec = encoding.Codec{
	Name:       codecs.NameJSON,
	Type:       codecs.MediaTypeJSON,
	NewEncoder: mjson.NewEncoder,
	// Frames are read through mesosframe.Guard: a frame size past the int
	// range made mesos-go's reader panic and crash the executor.
	NewDecoder: mesosframe.NewDecoder(unmarshalTolerant),
}

func unmarshalTolerant(b []byte, v interface{}) error {
	err := json.Unmarshal(b, v)
	ev, ok := v.(*executor.Event)
	if err == nil || !ok {
		return err
	}
	if lerr := decodeLoosely(b, ev); lerr != nil {
		return err // report the strict error
	}
	return nil
}

// looseEvent is the subset of an event the executor acts on.
type looseEvent struct {
	Type   executor.Event_Type `json:"type"`
	Launch *struct {
		Task looseTask `json:"task"`
	} `json:"launch"`
	Kill *struct {
		TaskID     mesos.TaskID      `json:"task_id"`
		KillPolicy *mesos.KillPolicy `json:"kill_policy"`
	} `json:"kill"`
	Acknowledged *executor.Event_Acknowledged `json:"acknowledged"`
	Message      *executor.Event_Message      `json:"message"`
	Error        *executor.Event_Error        `json:"error"`
}

type looseTask struct {
	Name       string            `json:"name"`
	TaskID     mesos.TaskID      `json:"task_id"`
	AgentID    mesos.AgentID     `json:"agent_id"`
	Data       []byte            `json:"data"`
	KillPolicy *mesos.KillPolicy `json:"kill_policy"`
}

func decodeLoosely(b []byte, ev *executor.Event) error {
	var l looseEvent
	if err := json.Unmarshal(b, &l); err != nil {
		return err
	}
	*ev = executor.Event{Type: l.Type, Acknowledged: l.Acknowledged, Message: l.Message, Error: l.Error}
	switch {
	case l.Type == executor.Event_SUBSCRIBED:
		ev.Subscribed = &executor.Event_Subscribed{} // details are informational only
	case l.Launch != nil:
		t := l.Launch.Task
		ev.Launch = &executor.Event_Launch{Task: mesos.TaskInfo{
			Name: t.Name, TaskID: t.TaskID, AgentID: t.AgentID, Data: t.Data, KillPolicy: t.KillPolicy,
		}}
	case l.Kill != nil:
		ev.Kill = &executor.Event_Kill{TaskID: l.Kill.TaskID, KillPolicy: l.Kill.KillPolicy}
	}
	return nil
}
