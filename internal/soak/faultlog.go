package soak

import (
	"slices"
	"strings"
	"time"
)

// memberFault: a fault kind that may take a member of the store away
// (StoreHold).
func memberFault(kind string) bool {
	switch kind {
	case "kill-leader", "kill-standby", "pause-leader", "standby-paused", "leader-cut-from-peers", "leader-peers-loss", "etcd-quorum-lost":
		return true
	}
	return false
}

// UnreachableBound is how long after a real agent is lost its tasks may
// still count as running: the master marks it unreachable after 3 missed
// pings of 2 s, the schedulers count its tasks lost after the shape's
// task_unreachable_timeout (20 s), checked every 5 s.
const UnreachableBound = 6*time.Second + 20*time.Second + 5*time.Second

// seenRunningUntil is, for a run the scheduler saw end late, until when
// it may have taken it as running: its job's fires meanwhile collapse into
// it (zero: no such fault).
//
// A run whose end's update died with its lost agent (updateLost under
// agent-lost) ran for the scheduler until it was counted lost.
//
// A run that ended while the leader's links to its store's peers lost packets, or up to
// maxLossStall after they healed (a chunk delayed before the heal holds the link's later ones
// behind it), had its end's commit wait on them: the leader's registry held it running until the
// commit landed.
//
// A run that ended while the engine was away for the leader (engineAway, or up to updateLag
// before), had its end held until it was back: the leader took it as running until then.
//
// A run lost with its node (lostWithNode), or whose end's report died with the node
// (endDiedWithNode), ran for the scheduler until its task was lost or its end reported
// (nodeGoneUntil).
func seenRunningUntil(r run, faults []Fault) time.Time {
	var until time.Time
	for _, f := range faults {
		switch {
		case f.Kind == AgentLost && !f.Start.Before(r.end) && f.Start.Before(r.end.Add(updateLag)):
			until = maxTime(until, f.Start.Add(UnreachableBound))
		case lossToStore(f.Kind) && !r.end.Before(f.Start) && !r.end.After(f.End.Add(maxLossStall)):
			until = maxTime(until, f.End.Add(maxLossStall))
		case engineAway(f.Kind) && !f.Start.After(r.end.Add(updateLag)) && !r.end.After(f.End):
			until = maxTime(until, f.End.Add(engineResendLag))
		case lostWithNode(r, f) || endDiedWithNode(r, f):
			until = maxTime(until, nodeGoneUntil(f, faults))
		}
	}
	return until
}

// NodeGone is the loss of a Kubernetes node with its runs (the clusters-real shape's kwok
// cluster: kwokCluster.loseNode): each run on it is recorded as ended TASK_LOST as the node
// goes, and its pods stay bound to it, never ended, until the Kubernetes engine deletes them
// after its pod GC's quarantine: only then are their tasks lost to the scheduler.
const NodeGone = "node-gone"

// NodeCrashed is the real Kubernetes node's crash (the clusters-real shape's kube cluster:
// Kube.downNode): its kubelet killed, then its containers, each run still going recorded as
// ended TASK_LOST (httpRecorder.lose), its Node object deleted; healed, the kubelet starts
// again and registers the node. As on NodeGone, the runs' pods stay bound to it, and the
// engine deletes them after its pod GC's quarantine if the node is still gone, their tasks
// lost then; a node back before that keeps its pods, and its kubelet reports their containers
// ended (killed: exit code 137) once it syncs them.
const NodeCrashed = "node-crashed"

// nodeGone: the fault takes a Kubernetes node away with its runs.
func nodeGone(kind string) bool { return kind == NodeGone || kind == NodeCrashed }

// podGCQuarantine is engine/kube's: how long a task's pod may stay on a node that is gone
// before the engine deletes it.
const podGCQuarantine = 40 * time.Second

// nodeGoneBound is how long after a node went with its runs the scheduler may hold their
// tasks running: the pod GC's quarantine, then the pods' deletion and the informer's news
// of it, on a loaded machine.
const nodeGoneBound = podGCQuarantine + 5*time.Second

// kubeletReportLag bounds how long after a crashed node is back (start.sh saw it Ready) its
// kubelet has reported the ends of the containers it finds killed: it syncs every pod bound
// to it as it starts, and every 10 s after (syncFrequency).
const kubeletReportLag = 15 * time.Second

// lostWithNode: the run ended as its node went (NodeGone, NodeCrashed).
func lostWithNode(r run, f Fault) bool {
	return nodeGone(f.Kind) && r.state == "TASK_LOST" && within(r.end, f.Start, f.End)
}

// endDiedWithNode: the run's end is recorded (its script posted it) within updateLag of its
// node's crash, so its executor may have been killed before its report of the end reached the
// scheduler: the kill follows the fault's start by the kubelet's end and a scan of /proc.
func endDiedWithNode(r run, f Fault) bool {
	return f.Kind == NodeCrashed && r.state != "TASK_LOST" && !r.end.IsZero() &&
		within(r.end, f.Start.Add(-updateLag), f.Start.Add(updateLag))
}

// nodeGoneUntil is until when the tasks of the node that fault f took away may count as
// running: nodeGoneBound after it, or, when the scheduler or the pod GC lost their cluster's
// API server meanwhile (stopped, or cut from the scheduler), until it was back; a crashed
// node back before that bound (its pods kept), until its kubelet has reported their ends.
func nodeGoneUntil(f Fault, faults []Fault) time.Time {
	until := f.Start.Add(nodeGoneBound)
	if f.Kind == NodeCrashed && f.End.Before(until) {
		until = maxTime(until, f.End.Add(kubeletReportLag))
	}
	for _, x := range faults {
		if engineAway(x.Kind) && faultCluster(x) == faultCluster(f) && x.Start.Before(until) && x.End.After(f.Start) {
			until = maxTime(until, x.End.Add(engineResendLag))
		}
	}
	return until
}

// faultCluster is the cluster a fault of the clusters shapes names first in its detail
// ("cluster NAME …"; "": none).
func faultCluster(f Fault) string {
	rest, ok := strings.CutPrefix(f.Detail, "cluster ")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, " ")
	return name
}

// engineResendLag bounds how long after the engine is back for the leader
// (a killed Mesos master once every agent registered again, the leader's
// link to the master or the API server restored, the API server started
// again) a task's end held meanwhile reaches it: the agents send their
// pending updates again when they register, the master its queued ones
// when the framework subscribes again, the Kubernetes engine reads the
// pods' states again when its watch resumes.
const engineResendLag = 2 * time.Second

// engineAway names the faults during which the leader hears of no task's
// end: the Mesos master down or out of its reach, the Kubernetes API
// server down or out of its reach.
func engineAway(kind string) bool {
	switch kind {
	case MasterKilled, "leader-cut-from-master", "apiserver-stopped", "leader-cut-from-apiserver":
		return true
	}
	return false
}

// lossToStore names the faults losing packets on the leader's links to its
// store: the etcd shapes' peers, the zk shape's ensemble.
func lossToStore(kind string) bool {
	return kind == "leader-peers-loss" || kind == "leader-registry-loss"
}

// resumed returns the faults, each with the first start after its heal of
// a run launched by a term newer than every term that launched a run
// before the fault began, before the next fault and within 30 s (zero:
// none): a new leader's catch-up of the fires no leader fired precedes
// its first launch.
func resumed(faults []Fault, runs []run) []Fault {
	const resumeBound = 30 * time.Second // before the next fault, and at most this long after the heal
	byStart := slices.Clone(runs)
	slices.SortFunc(byStart, func(a, b run) int { return a.At.Compare(b.At) })
	out := slices.Clone(faults)
	for k := range out {
		x := &out[k]
		var before int64
		for _, r := range byStart {
			if r.Term == nil {
				continue
			}
			if r.At.Before(x.Start) {
				before = max(before, *r.Term)
				continue
			}
			if r.At.After(x.End.Add(resumeBound)) || (k+1 < len(out) && r.At.After(out[k+1].Start)) {
				break // no takeover after this fault: the leader went on
			}
			if r.At.After(x.End) && *r.Term > before {
				x.resumed = r.At
				break
			}
		}
	}
	return out
}

// faultLog is the fault log the expectations read: the nemesis's faults, each with the first launch
// by a newer term after its heal (the leader change the run log's terms show: resumed) and, when a
// member of the store went away, until when a commit in flight as it began may be held (Input.StoreHold).
func faultLog(in Input, runs []run) []Fault {
	faults := resumed(in.Faults, runs)
	for k := range faults {
		if in.StoreHold > 0 && memberFault(faults[k].Kind) {
			faults[k].held = faults[k].Start.Add(in.StoreHold)
		}
	}
	return faults
}
