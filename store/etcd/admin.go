package etcd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// MemberStatus is one member of the cluster as its peers and itself
// report it.
type MemberStatus struct {
	ID         string   `json:"id"` // hex, as etcdctl prints it
	Name       string   `json:"name"`
	PeerURLs   []string `json:"peerURLs"`
	ClientURLs []string `json:"clientURLs"`
	Learner    bool     `json:"learner,omitempty"`
	// Healthy: the member answered a status request within the probe
	// timeout; the fields below are from that answer.
	Healthy   bool     `json:"healthy"`
	Leader    bool     `json:"leader"`
	RaftIndex uint64   `json:"raftIndex"`
	RaftTerm  uint64   `json:"raftTerm"`
	DBSize    int64    `json:"dbSizeBytes"`
	DBInUse   int64    `json:"dbSizeInUseBytes"`
	Version   string   `json:"version,omitempty"`
	Alarms    []string `json:"alarms,omitempty"` // NOSPACE, CORRUPT
	Errors    []string `json:"errors,omitempty"` // the member's own, or why it did not answer
}

// Admin operates the cluster the store lives in: its members, backup
// and restore of the registry, defragmentation. Its methods return
// plain data (package api takes them as any).
type Admin struct {
	s *Store
	// Exclude are store paths left out of backups and kept by restores:
	// the election's directory (its keys hold leases; a restore ends
	// the current terms by deleting them, see Restore).
	Exclude []string
	// Probe bounds one member's status request (1 s when 0).
	Probe time.Duration
	// RemoveWait bounds a member's removal (20 s when 0), within the 30 s
	// ejctl gives a call: etcd waits for a configuration change with no
	// bound of its own, and one proposed around a change of its raft
	// leader (an election, a leadership handoff) can be dropped and never
	// applied, a wait that would last as long as the caller's.
	RemoveWait time.Duration
	// removeTry bounds one proposal of a removal within RemoveWait (5 s
	// when 0): one that is not applied by then is proposed again.
	removeTry time.Duration
	// memberRemove proposes a removal (nil: the client's MemberRemove);
	// tests put a proposal that is dropped in its place.
	memberRemove func(ctx context.Context, id uint64) error
}

// NewAdmin returns the admin of s's cluster; exclude are the election
// directories (e.g. "/ha/election").
func NewAdmin(s *Store, exclude ...string) *Admin {
	return &Admin{s: s, Exclude: exclude, Probe: time.Second}
}

// Errors of the member operations, backup and restore. Each has the
// HTTP status the API answers it with (HTTPStatus), so package api maps
// them without importing this one.
var (
	ErrNoMember       error = adminError{"etcd cluster: no such member", 404}
	ErrMemberExists   error = adminError{"etcd cluster: a member with this name or peer URL exists", 409}
	ErrQuorumAtRisk   error = adminError{"etcd cluster: the change would leave the cluster without a quorum", 409}
	ErrBadMemberInput error = adminError{"etcd cluster: bad member", 400}
	ErrBadBackup      error = adminError{"etcd backup: not a whole registry backup", 400}
	// ErrChangeUnfinished: a membership change was not applied within its
	// bound (the raft cluster changing leader, or short of a quorum) and
	// the member list does not show it done; the API answers 503, and a
	// retry either applies it or finds it done.
	ErrChangeUnfinished error = adminError{"etcd cluster: the store's membership change did not finish; retry", 503}
)

type adminError struct {
	msg    string
	status int
}

func (e adminError) Error() string   { return e.msg }
func (e adminError) HTTPStatus() int { return e.status }

// Statuses lists the members with their health, leadership, raft index
// and store size, asking each member (bounded by Probe).
func (a *Admin) Statuses(ctx context.Context) ([]MemberStatus, error) {
	cli := a.s.cli
	ml, err := a.memberList(ctx)
	if err != nil {
		return nil, fmt.Errorf("etcd cluster: member list: %w", err)
	}
	alarms := map[uint64][]string{}
	if ar, err := cli.AlarmList(ctx); err == nil {
		for _, al := range ar.Alarms {
			alarms[al.MemberID] = append(alarms[al.MemberID], al.Alarm.String())
		}
	}
	probe := a.Probe
	if probe <= 0 {
		probe = time.Second
	}
	out := make([]MemberStatus, len(ml.Members))
	for i, m := range ml.Members {
		st := MemberStatus{ID: strconv.FormatUint(m.ID, 16), Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs,
			Learner: m.IsLearner, Alarms: alarms[m.ID]}
		if st.Name == "" {
			st.Errors = append(st.Errors, "not started yet (added, waiting for it to join)")
		}
		for _, u := range m.ClientURLs {
			pctx, cancel := context.WithTimeout(ctx, probe)
			s, err := a.s.urlClient().Status(pctx, u)
			cancel()
			if err != nil {
				st.Errors = append(st.Errors, fmt.Sprintf("%s: %v", u, err))
				continue
			}
			st.Healthy, st.Leader = true, s.Leader == m.ID
			st.RaftIndex, st.RaftTerm, st.DBSize, st.DBInUse, st.Version = s.RaftIndex, s.RaftTerm, s.DbSize, s.DbSizeInUse, s.Version
			st.Errors = append(st.Errors, s.Errors...)
			break
		}
		out[i] = st
	}
	slices.SortFunc(out, func(x, y MemberStatus) int { return strings.Compare(x.Name, y.Name) })
	return out, nil
}

// memberList lists the members. The list is linearizable: etcd answers it through its raft
// leader and fails it with "leader changed" when an election falls while it waits, which a
// loaded cluster's operator would otherwise get as a 500 for a cluster that is fine; it is
// asked again (retryLeaderChanged).
func (a *Admin) memberList(ctx context.Context) (*clientv3.MemberListResponse, error) {
	var ml *clientv3.MemberListResponse
	err := retryLeaderChanged(ctx, func() error {
		var err error
		ml, err = a.s.cli.MemberList(ctx)
		return err
	})
	return ml, err
}

// retryLeaderChanged calls f until it succeeds, fails otherwise than by a change of etcd's
// raft leader, or has been tried 5 times (an election takes about a second: 250 ms apart).
func retryLeaderChanged(ctx context.Context, f func() error) error {
	for try := 1; ; try++ {
		err := f()
		if err == nil || try == 5 || !(errors.Is(err, rpctypes.ErrLeaderChanged) || errors.Is(err, rpctypes.ErrNoLeader)) {
			return err
		}
		t := time.NewTimer(250 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
	}
}

// Members is Statuses for the API.
func (a *Admin) Members(ctx context.Context) (any, error) { return a.Statuses(ctx) }

func (a *Admin) find(ctx context.Context, nameOrID string) (*pb.Member, []*pb.Member, error) {
	ml, err := a.memberList(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("etcd cluster: member list: %w", err)
	}
	// A member added and not started yet has no name in etcd: AddMember
	// noted its id under the name it was given.
	var pending string
	if resp, err := a.s.cli.Get(ctx, a.addedKey(nameOrID)); err == nil && len(resp.Kvs) == 1 {
		pending = string(resp.Kvs[0].Value)
	}
	for _, m := range ml.Members {
		id := strconv.FormatUint(m.ID, 16)
		if m.Name == nameOrID || id == strings.ToLower(nameOrID) || m.Name == "" && id == pending {
			return m, ml.Members, nil
		}
	}
	return nil, ml.Members, fmt.Errorf("%w: %q (members: %s)", ErrNoMember, nameOrID, memberNames(ml.Members))
}

func memberNames(ms []*pb.Member) string {
	var names []string
	for _, m := range ms {
		names = append(names, cmpOr(m.Name, strconv.FormatUint(m.ID, 16)))
	}
	return strings.Join(names, ", ")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// RemoveMember removes a member (by name or hex ID) from the cluster:
// the step before a dead member's replacement, or its rejoining with an
// empty data directory. Removing a member that answers while another is
// down is refused (ErrQuorumAtRisk): remove the dead one.
func (a *Admin) RemoveMember(ctx context.Context, nameOrID string) error {
	m, all, err := a.find(ctx, nameOrID)
	if err != nil {
		return err
	}
	if len(all) == 1 {
		return fmt.Errorf("%w: %s is the only member", ErrQuorumAtRisk, nameOrID)
	}
	sts, err := a.Statuses(ctx)
	if err != nil {
		return err
	}
	healthy, target := 0, false
	for _, st := range sts {
		if st.Healthy {
			healthy++
			if st.ID == strconv.FormatUint(m.ID, 16) {
				target = true
			}
		}
	}
	after := len(all) - 1
	if target && healthy-1 < after/2+1 {
		return fmt.Errorf("%w: removing %s, which answers, leaves %d of %d members answering", ErrQuorumAtRisk, nameOrID, healthy-1, after)
	}
	if err := a.remove(ctx, m.ID); err != nil {
		return fmt.Errorf("etcd cluster: remove %s: %w", nameOrID, err)
	}
	for _, n := range []string{m.Name, nameOrID} {
		if n != "" {
			_, _ = a.s.cli.Delete(ctx, a.addedKey(n))
		}
	}
	return nil
}

// remove proposes the removal of member id until it is applied, within
// RemoveWait. etcd answers a proposal only once it is applied, so each is
// bounded (removeTry); after a proposal that failed or was not answered,
// the member list says whether it was applied all the same (its answer
// lost, or an earlier proposal applied late): the removal is done when the
// member is no longer listed. A proposal applied after an earlier one
// fails as the removal of an unknown member: done too.
func (a *Admin) remove(ctx context.Context, id uint64) error {
	wait := cmp.Or(a.RemoveWait, 20*time.Second)
	try := min(cmp.Or(a.removeTry, 5*time.Second), wait)
	propose := a.memberRemove
	if propose == nil {
		propose = func(ctx context.Context, id uint64) error {
			_, err := a.s.cli.MemberRemove(ctx, id)
			return err
		}
	}
	deadline := time.Now().Add(wait)
	for tries := 1; ; tries++ {
		tctx, cancel := context.WithTimeout(ctx, min(try, time.Until(deadline)))
		err := propose(tctx, id)
		cancel()
		if err == nil || errors.Is(err, rpctypes.ErrMemberNotFound) {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		// Asked even past the deadline (for a second at least): the answer
		// to give depends on it.
		gone, lerr := a.removed(ctx, id, min(try, max(time.Until(deadline), time.Second)))
		if lerr == nil && gone {
			return nil
		}
		if !unfinished(err) {
			return err
		}
		if time.Until(deadline) <= 0 {
			listed := "the member is still listed"
			if lerr != nil {
				listed = fmt.Sprintf("the member list did not answer (%v)", lerr)
			}
			return fmt.Errorf("%w: not applied within %v (%d proposals, the last: %v); %s", ErrChangeUnfinished, wait, tries, err, listed)
		}
		// A proposal refused at once (no raft leader) is not sent again
		// straight away: an election takes about a second.
		pause := time.NewTimer(min(250*time.Millisecond, time.Until(deadline)))
		select {
		case <-pause.C:
		case <-ctx.Done():
			pause.Stop()
			return err
		}
	}
}

// removed reports whether member id is no longer listed, asking within bound.
func (a *Admin) removed(ctx context.Context, id uint64, bound time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	ml, err := a.memberList(ctx)
	if err != nil {
		return false, err
	}
	return !slices.ContainsFunc(ml.Members, func(m *pb.Member) bool { return m.ID == id }), nil
}

// unfinished reports whether err leaves a proposal's fate open: it was not
// answered in time, or dropped or cut short by a change of raft leader.
func unfinished(err error) bool {
	for _, e := range []error{context.DeadlineExceeded, rpctypes.ErrTimeout, rpctypes.ErrTimeoutDueToLeaderFail,
		rpctypes.ErrTimeoutDueToConnectionLost, rpctypes.ErrTimeoutWaitAppliedIndex, rpctypes.ErrLeaderChanged, rpctypes.ErrNoLeader} {
		if errors.Is(err, e) {
			return true
		}
	}
	return status.Code(err) == codes.DeadlineExceeded || strings.Contains(err.Error(), "raft proposal dropped")
}

// addedKey notes the id of a member AddMember added as name.
func (a *Admin) addedKey(name string) string { return a.s.k.prefix + "/members-added/" + name }

// Added is what a new member must be started with: its name, its peer
// URL and the initial cluster to join (MemberConfig.Join).
type Added struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	PeerURL        string `json:"peerURL"`
	InitialCluster string `json:"initialCluster"` // name=peerURL,… (etcd_peers)
}

// AddMember adds a member to the cluster: start it next with an empty
// data directory, MemberConfig.Join and the returned initial cluster.
func (a *Admin) AddMember(ctx context.Context, name, peerURL string) (Added, error) {
	if name == "" || !strings.HasPrefix(peerURL, "http://") && !strings.HasPrefix(peerURL, "https://") {
		return Added{}, fmt.Errorf("%w: want a name and an http(s) peer URL, got %q and %q", ErrBadMemberInput, name, peerURL)
	}
	ml, err := a.memberList(ctx)
	if err != nil {
		return Added{}, fmt.Errorf("etcd cluster: member list: %w", err)
	}
	for _, m := range ml.Members {
		if m.Name == name || slices.Contains(m.PeerURLs, peerURL) {
			return Added{}, fmt.Errorf("%w: %s (%s); remove it first", ErrMemberExists, cmpOr(m.Name, strconv.FormatUint(m.ID, 16)), strings.Join(m.PeerURLs, ","))
		}
	}
	// etcd adds a voting member only when every member has been
	// connected to the others for 5 s (ErrUnhealthy before): a cluster
	// that just lost or removed a member gets that long, and 10 s more.
	var resp *clientv3.MemberAddResponse
	wait := time.NewTimer(0)
	defer wait.Stop()
	for deadline := time.Now().Add(15 * time.Second); ; {
		resp, err = a.s.cli.MemberAdd(ctx, []string{peerURL})
		if err == nil {
			break
		}
		if !errors.Is(err, rpctypes.ErrUnhealthy) || time.Now().After(deadline) {
			return Added{}, fmt.Errorf("etcd cluster: add %s: %w", name, err)
		}
		wait.Reset(500 * time.Millisecond)
		select {
		case <-wait.C:
		case <-ctx.Done():
			return Added{}, fmt.Errorf("etcd cluster: add %s: %w", name, ctx.Err())
		}
	}
	var peers []string
	for _, m := range resp.Members {
		n := m.Name
		if m.ID == resp.Member.ID {
			n = name
		}
		for _, u := range m.PeerURLs {
			peers = append(peers, n+"="+u)
		}
	}
	slices.Sort(peers)
	id := strconv.FormatUint(resp.Member.ID, 16)
	if _, err := a.s.cli.Put(ctx, a.addedKey(name), id); err != nil {
		a.s.log.Warn("note of an added member's name failed (remove it by id)", "member", name, "id", id, "err", err)
	}
	return Added{ID: strconv.FormatUint(resp.Member.ID, 16), Name: name, PeerURL: peerURL, InitialCluster: strings.Join(peers, ",")}, nil
}

// AddMemberAny is AddMember for the API.
func (a *Admin) AddMemberAny(ctx context.Context, name, peerURL string) (any, error) {
	return a.AddMember(ctx, name, peerURL)
}

// ParsePeers parses an initial cluster "name=url,…".
func ParsePeers(s string) ([]Peer, error) {
	var peers []Peer
	for part := range strings.SplitSeq(s, ",") {
		name, u, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || name == "" || u == "" {
			return nil, fmt.Errorf("etcd peers %q: want name=url,…", s)
		}
		peers = append(peers, Peer{Name: name, URL: u})
	}
	return peers, nil
}
