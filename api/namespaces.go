package api

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/identity"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/nsusage"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/secrets"
	"github.com/gin-gonic/gin"
)

// tenancyHandlers serve /api/namespaces: namespaces, their usage, tokens and secrets,
// and the secrets an executor fetches.
type tenancyHandlers struct {
	*core
	secrets    *secrets.Keyring // Options.Tenancy.Secrets
	tenancy    *TenantIsolation // Options.Tenancy.TenantIsolation
	nsSeries   *nsusage.Series  // Options.Tenancy.NamespaceSeries
	engineCaps func(ns string) *EngineCap
	idleExecs  func(ctx context.Context, ns string) ([]IdleExecutor, bool)
	nsChanged  func()          // Options.Tenancy.NamespaceChanged
	binding    ExecutorBinding // Options.Tenancy.ExecutorBinding
	clusters   []ClusterConfig // Options.Operate.Clusters: perCluster names only these
	// auditFetch records a refused secret fetch (Server.auditSecretFetch).
	auditFetch func(c *gin.Context, taskID string, status int, summary string)
}

// Usage is what a namespace holds and uses now.
type Usage struct {
	Apps         int `json:"apps"`
	Jobs         int `json:"jobs"`
	Workflows    int `json:"workflows"`
	RunningTasks int `json:"runningTasks"`
	Queued       int `json:"queued"` // pending executions and failed shards waiting to run again
	// InUse is what its running tasks hold: each shard's resources, and
	// once per app and agent its executor's, idle ones too where this
	// instance leads.
	InUse namespace.Resources `json:"inUse"`
	// IdleExecutors are its apps' executors up without a task (absent:
	// none, or a standby that does not know them).
	IdleExecutors []IdleExecutor `json:"idleExecutors,omitempty"`
}

// namespaceView is a namespace as GET /api/namespaces shows it.
type namespaceView struct {
	namespace.Record
	Role  identity.Role `json:"role"` // the caller's
	Usage Usage         `json:"usage"`
	// TenantIsolation keeps its tasks from the others' (docs/tenancy.md).
	TenantIsolation *TenantIsolation `json:"tenantIsolation,omitempty"`
}

// TenantIsolation says whether the tasks of one namespace are kept from
// another's and from the scheduler's files where they run: mode "on" (the
// embedded agent runs each namespace's tasks as a user of its own in PID
// and mount namespaces), "off" (tenant_isolation=off), "unavailable" (the
// scheduler cannot: not root, no namespaces; Reason says why) or "engine"
// (Mesos agents or Kubernetes keep them apart, as configured there).
type TenantIsolation struct {
	Mode   string `json:"mode"`
	Reason string `json:"reason,omitempty"`
}

// Tenant isolation modes.
const (
	TenantIsolationOn          = "on"
	TenantIsolationOff         = "off"
	TenantIsolationUnavailable = "unavailable"
	TenantIsolationEngine      = "engine"
)

// refuseNamespace refuses to make a namespace other than default while
// tenant isolation is unavailable: its tasks would read the others'.
func (s *tenancyHandlers) refuseNamespace(ctx context.Context, name string) error {
	ti := s.tenancy
	if ti == nil || ti.Mode != TenantIsolationUnavailable || name == namespace.Default {
		return nil
	}
	if _, err := s.reg.Tenancy().Namespace(ctx, name); err == nil {
		return nil // a change of one that exists
	}
	return fmt.Errorf("%w: tenant isolation is unavailable (%s): another namespace's tasks would run as the scheduler's user beside default's; run the scheduler as root, or set tenant_isolation=off to accept that (docs/tenancy.md)",
		ErrConflict, ti.Reason)
}

func (s *tenancyHandlers) listNamespaces(c *gin.Context) {
	recs, err := s.reg.Tenancy().Namespaces(c)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	p := principal(c)
	out := []namespaceView{}
	for _, rec := range recs {
		role, ok := p.RoleIn(rec.Name)
		if !ok {
			continue // not a word about namespaces the caller has no role in
		}
		v := namespaceView{Record: rec, Role: role, TenantIsolation: s.tenancy}
		if v.Usage, err = s.usage(c, rec.Name); err != nil {
			writeError(c, s.log, err)
			return
		}
		out = append(out, v)
	}
	c.JSON(http.StatusOK, out)
}

func (s *tenancyHandlers) getNamespace(c *gin.Context) {
	name := nsOf(c)
	rec, err := s.reg.Tenancy().Namespace(c, name)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	role, _ := principal(c).RoleIn(name)
	v := namespaceView{Record: rec, Role: role, TenantIsolation: s.tenancy}
	if v.Usage, err = s.usage(c, name); err != nil {
		writeError(c, s.log, err)
		return
	}
	c.JSON(http.StatusOK, v)
}

// usage reads what a namespace holds and what its running tasks use.
func (s *tenancyHandlers) usage(ctx context.Context, ns string) (Usage, error) {
	reg := s.reg.In(ns)
	h, err := reg.Tenancy().Holdings(ctx)
	if err != nil {
		return Usage{}, err
	}
	u := Usage{Apps: len(h.Apps), Jobs: len(h.Jobs), Workflows: len(h.Workflows), RunningTasks: h.Running, Queued: h.Queued}
	if h.Running > 0 {
		if u.InUse, err = reg.Tenancy().InUse(ctx); err != nil {
			return u, err
		}
	}
	u.IdleExecutors = s.idle(ctx, ns)
	u.InUse = withIdle(u.InUse, u.IdleExecutors)
	return u, nil
}

// idle is ns's idle executors where this instance leads (nil: none or
// not known here).
func (s *tenancyHandlers) idle(ctx context.Context, ns string) []IdleExecutor {
	if s.idleExecs == nil {
		return nil
	}
	idle, ok := s.idleExecs(ctx, ns)
	if !ok {
		return nil
	}
	return idle
}

// withIdle adds the idle executors' resources to in.
func withIdle(in namespace.Resources, idle []IdleExecutor) namespace.Resources {
	for _, e := range idle {
		in = in.Add(namespace.Resources{CPUCount: e.CPUCount, MemoryMB: e.MemoryMB})
	}
	return in
}

// namespaceBody is PUT /api/namespaces/{name}: every field optional.
type namespaceBody struct {
	Guarantee *namespace.Resources `json:"guarantee"`
	Limit     *namespace.Resources `json:"limit"`
	Weight    *float64             `json:"weight"`
	Jitter    string               `json:"jitter"`
	Clusters  []string             `json:"clusters"`
	// PerCluster are its guarantee and limit per cluster (docs/clusters.md).
	PerCluster map[string]namespace.ClusterCapacity `json:"perCluster"`
	Caps       *namespace.HostCaps                  `json:"caps"`
}

func (s *tenancyHandlers) putNamespace(c *gin.Context) {
	body, err := readBody(c, s.maxBody)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	var req namespaceBody
	if len(body) > 0 {
		if err := decodeStrict(body, &req); err != nil {
			writeError(c, s.log, err)
			return
		}
	}
	rec := namespace.Record{Name: nsOf(c), Guarantee: req.Guarantee, Limit: req.Limit, Jitter: req.Jitter, Clusters: req.Clusters,
		PerCluster: req.PerCluster, Caps: req.Caps}
	if req.Weight != nil {
		rec.Weight = *req.Weight
	}
	if err := rec.Validate(); err != nil {
		writeError(c, s.log, fmt.Errorf("%w: %s", ErrBadRequest, trimSentinel(err, namespace.ErrInvalid)))
		return
	}
	if err := s.checkPerCluster(rec); err != nil {
		writeError(c, s.log, err)
		return
	}
	if err := s.refuseNamespace(c, rec.Name); err != nil {
		writeError(c, s.log, err)
		return
	}
	created, err := s.reg.Tenancy().PutNamespace(c, rec)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	s.namespaceChanged()
	v := namespaceView{Record: rec, Role: identity.Edit, TenantIsolation: s.tenancy}
	if v.Usage, err = s.usage(c, rec.Name); err != nil {
		writeError(c, s.log, err)
		return
	}
	code := http.StatusOK
	if created && rec.Name != namespace.Default { // default always exists: its first record changes it
		code = http.StatusCreated
	}
	c.JSON(code, v)
}

func (s *tenancyHandlers) deleteNamespace(c *gin.Context) {
	if err := s.reg.Tenancy().DeleteNamespace(c, nsOf(c)); err != nil {
		if errors.Is(err, registry.ErrNamespaceNotEmpty) {
			err = fmt.Errorf("%w: %s", ErrConflict, trimSentinel(err, registry.ErrNamespaceNotEmpty))
		}
		writeError(c, s.log, err)
		return
	}
	s.namespaceChanged()
	c.Status(http.StatusNoContent)
}

// checkPerCluster refuses a per-cluster capacity on a cluster the scheduler does not
// run on: unlike a placement list, which may name a cluster before it is added (the
// runbook's order), a capacity on an unknown cluster holds nothing and is a typo. With a
// single engine there is nothing per cluster to set.
func (s *tenancyHandlers) checkPerCluster(rec namespace.Record) error {
	if len(rec.PerCluster) == 0 || s.clusters == nil {
		return nil
	}
	if len(s.clusters) < 2 {
		return fmt.Errorf("%w: perCluster needs several clusters (clusters_file); this scheduler runs on one: set guarantee and limit instead", ErrBadRequest)
	}
	names := make([]string, len(s.clusters))
	for i, cl := range s.clusters {
		names[i] = cl.Name
	}
	for _, name := range slices.Sorted(maps.Keys(rec.PerCluster)) {
		if !slices.Contains(names, name) {
			return fmt.Errorf("%w: perCluster names cluster %q, which is not configured (the clusters: %s)", ErrBadRequest, name, strings.Join(names, ", "))
		}
	}
	return nil
}

// namespaceChanged tells the leader's launch round (when this instance
// leads: writes are served by the leader) that the capacities changed.
func (s *tenancyHandlers) namespaceChanged() {
	if s.nsChanged != nil {
		s.nsChanged()
	}
}

var tokenNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// tokenBody is POST /api/namespaces/{name}/tokens.
type tokenBody struct {
	Name      string        `json:"name"`
	Role      identity.Role `json:"role"`      // view (default) or edit
	ExpiresAt *time.Time    `json:"expiresAt"` // none: until revoked
}

// createToken makes a namespace API token and shows it once: only its
// hash is kept. An editor makes tokens of its namespace, as view or edit;
// a token cannot make tokens (a leaked one must not outlive its
// revocation).
func (s *tenancyHandlers) createToken(c *gin.Context) {
	p := principal(c)
	if p.Kind == identity.KindToken {
		writeError(c, s.log, fmt.Errorf("%w: an API token cannot make API tokens; a user who edits the namespace can", ErrForbidden))
		return
	}
	body, err := readBody(c, s.maxBody)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	var req tokenBody
	if err := decodeStrict(body, &req); err != nil {
		writeError(c, s.log, err)
		return
	}
	if !tokenNameRE.MatchString(req.Name) {
		writeError(c, s.log, fmt.Errorf("%w: name must be 1-64 letters, digits, '.', '_' or '-' (what the token is for: ci, deploy)", ErrBadRequest))
		return
	}
	if req.Role == "" {
		req.Role = identity.View
	}
	if _, err := identity.ParseRole(string(req.Role)); err != nil {
		writeError(c, s.log, fmt.Errorf("%w: %v", ErrBadRequest, err))
		return
	}
	now := s.clock.Now().UTC()
	if req.ExpiresAt != nil && !req.ExpiresAt.After(now) {
		writeError(c, s.log, fmt.Errorf("%w: expiresAt %s is not in the future", ErrBadRequest, req.ExpiresAt.Format(time.RFC3339)))
		return
	}
	tok, rec, err := identity.NewAPIToken(identity.APIToken{Namespace: nsOf(c), Name: req.Name, Role: req.Role,
		CreatedBy: p.Name, CreatedAt: now, ExpiresAt: req.ExpiresAt})
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	if err := s.reg.Tenancy().AddToken(c, rec); err != nil {
		writeError(c, s.log, err)
		return
	}
	rec.Hash = ""
	c.JSON(http.StatusCreated, gin.H{"token": tok, "id": rec.ID, "namespace": rec.Namespace, "name": rec.Name, "role": rec.Role,
		"createdBy": rec.CreatedBy, "createdAt": rec.CreatedAt, "expiresAt": rec.ExpiresAt,
		"message": "keep this token now: it is not shown again"})
}

func (s *tenancyHandlers) listTokens(c *gin.Context) {
	ts, err := s.reg.Tenancy().Tokens(c, nsOf(c))
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	c.JSON(http.StatusOK, ts)
}

func (s *tenancyHandlers) revokeToken(c *gin.Context) {
	if err := s.reg.Tenancy().RevokeToken(c, nsOf(c), c.Param("id")); err != nil {
		if errors.Is(err, registry.ErrTokenNotFound) {
			err = fmt.Errorf("%w: no token '%s' in namespace '%s'", ErrNotFound, c.Param("id"), nsOf(c))
		}
		writeError(c, s.log, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// trimSentinel drops a sentinel's own words from an error's message.
func trimSentinel(err, sentinel error) string {
	msg := err.Error()
	if p := sentinel.Error() + ": "; len(msg) > len(p) && msg[:len(p)] == p {
		return msg[len(p):]
	}
	return msg
}
