// Package mesos is the scheduler's Mesos client: the v1 scheduler HTTP API spoken
// through mesos-go v0.0.11, behind the engine vocabulary (package engine: Offer, TaskLaunch,
// Status, Handler) so that the rest of the scheduler never sees protobuf types. This package is
// the Mesos edge of that vocabulary: it encodes a launch's typed payload (TaskLaunch.Task) as
// TaskInfo.data, turns the TaskStatus enums into task.State, task.Reason and task.Source of the
// same names, and declares its executors shared (Capabilities). It talks to the embedded single-node master
// (engine/mesos/embedded) and to a real Apache Mesos 1.x master alike.
//
// # Subscription
//
// Client.Run sends SUBSCRIBE to URL+"/api/v1/scheduler" and reads the RecordIO event stream
// with mesos-go's httpcli client: in protobuf to a master in this process (package inproc: both
// ends have the same protos), in JSON to any other, its events decoded tolerantly of enum
// values newer than the protos (decode.go). FrameworkInfo carries name, user, role
// (default "*"), hostname, principal, the known framework id, failover_timeout (default 7 days,
// so tasks survive scheduler restarts), checkpoint (on unless Config.NoCheckpoint: agents then
// recover the framework's tasks across an agent restart instead of killing them) and the
// PARTITION_AWARE capability: with it Mesos reports TASK_UNREACHABLE / TASK_GONE / TASK_DROPPED /
// TASK_UNKNOWN / TASK_GONE_BY_OPERATOR instead of folding them all into TASK_LOST, and a task on
// a partitioned agent that comes back keeps running, which the status handler relies on (SPEC §3).
//
// With a Secret, every request to the master (SUBSCRIBE, the calls, the operator API) carries
// HTTP Basic authentication as Principal:Secret. A SUBSCRIBE answered 401 or 403 is ErrRefused:
// logged at error level with what to check, and retried every BackoffMax, never in a fast loop.
//
// The master's framework id from SUBSCRIBED replaces the client's (Handler.Subscribed is called
// after every subscription so the scheduler persists it and reconciles). If no event arrives for
// (HeartbeatGrace+1) heartbeat intervals, the stream is cancelled. On any loss the client calls
// Handler.Disconnected (held offers are void) and re-subscribes with jittered exponential backoff
// with the current id. An ERROR event ("Framework has been removed") makes it start over as a new
// framework with an empty id, logged at error level; "Framework failed over" keeps the id.
//
// # Finding the master
//
// Config.Detector, when set, names the leading master before every SUBSCRIBE and reports when
// leadership moves (engine/mesos/detector follows a zk:// URL as Mesos' own detector does). A move
// drops the live stream (Handler.Disconnected with ErrLeaderMoved) and cuts a pending backoff
// short, and the client subscribes to the new leader with the same framework id. Without a
// detector, URL is the master; a 307 from a non-leading master is followed either way.
//
// mesos-go's httpsched state machine is not used: after following a 307 to the leading master it
// keeps sending the other calls to the configured (non-leading) endpoint, and its redirect backoff
// is only tunable through a package global. The client does the little it needs itself: follow the
// Location of a 307 on SUBSCRIBE, send every call of that session to the same endpoint with the
// Mesos-Stream-Id header, and drop the stream when a call gets 403 (unsubscribed) or 307.
//
// # Decoding
//
// A real master's JSON carries things the v0.0.11 protos do not know (SPEC §9). The generated
// decoders already skip unknown fields, accept `{}` entries in master_info.capabilities and a
// packed-integer master_info.ip, but fail on an unknown enum name (a new capability, task state,
// reason or event type). The stream is decoded into a wrapper whose UnmarshalJSON retries such a
// frame with the unknown enum values removed; an UPDATE keeps its raw state, reason and source
// names so the handler sees them verbatim. See decode.go.
//
// # Offers and launches
//
// Offers are summarised as scalar cpus and mem usable by the framework (unreserved "*" or
// reserved for its role, allocated to its role, not revocable or shared). The raw offer is held
// until it is accepted, declined, rescinded or voided by a disconnection. Accept builds each
// TaskInfo's resources by carving cpus/mem out of the offer's own resource objects (copying role,
// reservations and allocation_info), never inventing them. Accept may be called for several
// agents at once (Capabilities().Accepts: the scheduler keeps up to 8 of a round's ACCEPTs in
// flight, each one HTTP call over a connection of its own); the offers and executors it reads
// and changes are under the client's lock, the executors indexed by agent, so an ACCEPT touches
// its own agent's entries only.
//
// ExecutorInfo resources: Mesos charges an executor's resources against the offer only when the
// executor is not yet running on the agent, and rejects a task whose ExecutorInfo differs from the
// running executor's (the comparison includes resources, command, name and framework id). The
// client therefore always sends the full ExecutorInfo, including its resources, for every task of
// an executor, built deterministically: one cpus and one mem object shaped like the first usable
// resource of that name in the offer, not subtracted from the pool the tasks are carved from. The
// caller decides whether the executor is already running and charges its resources in its own
// accounting only when it is not; the master then verifies that the offer covers task plus
// executor. The caller must pass the same ExecutorSpec for every task of one executor id (a zero
// CPUs or MemMB leaves that resource out, consistently).
//
// An executor started by another scheduler instance (the previous leader, or this scheduler
// before a restart) may run with another ExecutorInfo — another URL for the executor binary,
// other settings — and Mesos refuses a task whose ExecutorInfo differs from its running
// executor's (TASK_ERROR). The client therefore remembers the ExecutorInfo of each running
// executor per agent (its own launches; for executors an offer lists as running that it does not
// know, the master's operator API GET_EXECUTORS, asked once) and sends a task for a running
// executor with that executor's ExecutorInfo. See executors.go.
package mesos
