package jobs

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// TaskKind says why a task was launched.
type TaskKind string

const (
	KindReady    TaskKind = "READY"
	KindFailover TaskKind = "FAILOVER"
)

// TaskID is the parsed form of
// {jobName}@-@{item}@-@{READY|FAILOVER}@-@{agentId}@-@{uuid}.
//
// Ids made by FireTaskID (this version's launches) leave the agent part
// empty and carry a version 8 UUID that is a pure function of the fire:
// two launches of one fire get one id wherever they are placed, so the
// engine itself refuses the second (Mesos: "Task has duplicate ID", across
// the framework; Kubernetes: the pod name, a hash of the id, exists).
// Ids of older versions (a random version 4 or 7 UUID) and of the
// original's registry (the agent part set) still parse.
type TaskID struct {
	JobName string
	Item    int
	Kind    TaskKind
	AgentID string
	UUID    string
}

// NewTaskID makes a task id with a fresh random uuid.
func NewTaskID(job string, item int, kind TaskKind, agentID string) TaskID {
	return TaskID{JobName: job, Item: item, Kind: kind, AgentID: agentID, UUID: NewUUID()}
}

// FireTaskID is the task id of one launch of a fire: job, shard item and
// kind, execution (what names the fire and the attempt: the run's nominal
// instant or key, the failed task a failover relaunches and its attempt,
// as the registry holds them) and at, the instant the fire was queued
// (the UUID's first 48 bits, so history rows keyed by it stay in time
// order). The same arguments give the same id; the agent part is empty.
func FireTaskID(job string, item int, kind TaskKind, execution string, at time.Time) TaskID {
	h := sha256.New()
	for _, p := range []string{job, strconv.Itoa(item), string(kind), execution} {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return TaskID{JobName: job, Item: item, Kind: kind, UUID: UUIDAt(at, h.Sum(nil)[:16], 8)}
}

func (t TaskID) String() string {
	return strings.Join([]string{t.JobName, strconv.Itoa(t.Item), string(t.Kind), t.AgentID, t.UUID}, Separator)
}

// MetaKey is {jobName}@-@{item}, the key of running and failover entries.
func (t TaskID) MetaKey() string { return MetaKey(t.JobName, t.Item) }

// MetaKey is {jobName}@-@{item}.
func MetaKey(job string, item int) string { return job + Separator + strconv.Itoa(item) }

// ParseMetaKey splits {jobName}@-@{item}.
func ParseMetaKey(s string) (string, int, error) {
	job, it, ok := strings.Cut(s, Separator)
	if !ok {
		return "", 0, fmt.Errorf("jobs: %q is not jobName@-@item", s)
	}
	item, ok := parseItem(it)
	if !ok {
		return "", 0, fmt.Errorf("jobs: %q has a bad shard item", s)
	}
	return job, item, nil
}

// ParseTaskID parses a task id string.
func ParseTaskID(s string) (TaskID, error) {
	if strings.ContainsAny(s, "/\x00") {
		// A task id names its directory in a sandbox (tasks/<id>): it must
		// be one path component.
		return TaskID{}, fmt.Errorf("jobs: task id %q must not contain '/' or NUL", s)
	}
	var parts [5]string // strings.Split's parts, without its slice: every status update parses one
	rest, n := s, 0
	for ; n < 4; n++ {
		a, b, ok := strings.Cut(rest, Separator)
		if !ok {
			break
		}
		parts[n], rest = a, b
	}
	if n != 4 || strings.Contains(rest, Separator) {
		return TaskID{}, fmt.Errorf("jobs: task id %q must have 5 parts joined by %s", s, Separator)
	}
	parts[4] = rest
	item, ok := parseItem(parts[1])
	if !ok {
		return TaskID{}, fmt.Errorf("jobs: task id %q has a bad shard item %q", s, parts[1])
	}
	kind := TaskKind(parts[2])
	if kind != KindReady && kind != KindFailover {
		return TaskID{}, fmt.Errorf("jobs: task id %q has kind %q, want READY or FAILOVER", s, parts[2])
	}
	return TaskID{JobName: parts[0], Item: item, Kind: kind, AgentID: parts[3], UUID: parts[4]}, nil
}

// parseItem reads a shard item written by strconv.Itoa: no sign, no
// leading zeros, so "+1" and "01" do not name the task of item 1.
func parseItem(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0 && strconv.Itoa(n) == s
}

// ExecutorID is {appName}@-@{agentId}: one executor per app per agent.
func ExecutorID(appName, agentID string) string { return appName + Separator + agentID }

// ParseExecutorID splits an executor id into app name and agent id.
func ParseExecutorID(s string) (appName, agentID string, err error) {
	a, b, ok := strings.Cut(s, Separator)
	if !ok || a == "" {
		return "", "", fmt.Errorf("jobs: executor id %q is not appName@-@agentId", s)
	}
	return a, b, nil
}

// NewUUID returns a fresh RFC 9562 version 7 UUID: 48 bits of Unix
// milliseconds, then random bits. Unique like a version 4 UUID, and
// ordered by time, so the history rows keyed by it (trace.TaskEventID)
// are appended to their indexes rather than scattered over them.
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return UUIDAt(time.Now(), b[:], 7)
}

// UUIDAt is the UUID of the given version (7: random rest, 8: a custom
// one) whose first 48 bits are t in Unix milliseconds and whose other bits
// come from rest (16 bytes; its first 6 are replaced).
func UUIDAt(t time.Time, rest []byte, version byte) string {
	var b [16]byte
	copy(b[:], rest)
	ms := uint64(t.UnixMilli())
	for i := range 6 {
		b[i] = byte(ms >> (40 - 8*i))
	}
	b[6] = b[6]&0x0f | version<<4
	b[8] = b[8]&0x3f | 0x80
	return FormatUUID(b)
}

// FormatUUID writes b in the canonical 8-4-4-4-12 form, lowercase: what
// fmt's "%x-%x-%x-%x-%x" of its parts gives, at a tenth of the cost (one
// string allocated). Every launch and every history row formats one.
func FormatUUID(b [16]byte) string {
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], b[10:16])
	return string(out[:])
}

// UUIDTime is the time (to the millisecond) in a version 7 or 8 UUID
// (NewUUID, FireTaskID); false for any other string (older task ids carry
// version 4 UUIDs).
func UUIDTime(u string) (time.Time, bool) {
	if len(u) != 36 || u[8] != '-' || u[13] != '-' || (u[14] != '7' && u[14] != '8') {
		return time.Time{}, false
	}
	ms, err := strconv.ParseUint(u[:8]+u[9:13], 16, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(ms)), true
}
