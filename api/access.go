package api

import (
	"context"
	"fmt"
	"strings"

	"github.com/ejcloud/elasticjob/identity"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/gin-gonic/gin"
)

// Every request to /api is in one namespace: ?namespace=NAME, absent the
// default one (so the original's requests are the default namespace's),
// or the {name} of /api/namespaces/{name}/…. namespaceOf resolves it, once,
// in authorize; handlers read it with nsOf and reach the registry through
// regOf, which sees that namespace alone.

// Gin context keys of the caller and its namespace.
const (
	ctxPrincipal = "ej.principal" // identity.Principal, set by the auth middleware
	ctxNamespace = "ej.namespace" // the request's namespace, set by authorize
)

// access is what a route asks of its caller.
type access int

const (
	// accessNamespace: a role in the request's namespace, view to read
	// and edit to write. Every route not listed in routeAccess.
	accessNamespace access = iota
	// accessAnyone: any authenticated caller (the route shows nothing a
	// namespace holds, or only what the caller may see).
	accessAnyone
	// accessAdmin: the admin only.
	accessAdmin
	// accessScheduler: a role in the default namespace (the scheduler's
	// own state: its instances and agents), as the guest always had.
	accessScheduler
	// accessAudit: the admin, or an editor, who reads its namespaces' rows.
	accessAudit
)

// routeAccess lists the routes that are not a namespace's, by "METHOD
// route". The route walk in access_test.go checks every route against it.
var routeAccess = map[string]access{
	"GET /api/whoami":                             accessAnyone,
	"GET /api/cron/next":                          accessAnyone, // a cron expression's next fires: no data
	"GET /api/namespaces":                         accessAnyone, // lists the caller's own
	"PUT /api/namespaces/:name":                   accessAdmin,
	"DELETE /api/namespaces/:name":                accessAdmin,
	"POST /api/operate/reconcile/explicit":        accessAdmin,
	"POST /api/operate/reconcile/implicit":        accessAdmin,
	"POST /api/operate/secrets/reseal":            accessAdmin,
	"GET /api/operate/cluster":                    accessScheduler,
	"GET /api/operate/clusters":                   accessScheduler,
	"PUT /api/operate/clusters/:cluster/drain":    accessAdmin,
	"DELETE /api/operate/clusters/:cluster/drain": accessAdmin,
	"GET /api/operate/store/members":              accessAdmin,
	"POST /api/operate/store/members":             accessAdmin,
	"DELETE /api/operate/store/members/:member":   accessAdmin,
	"GET /api/operate/store/backup":               accessAdmin,
	"POST /api/operate/store/restore":             accessAdmin,
	"GET /api/audit":                              accessAudit,
	"GET " + damagedRoute:                         accessAnyone, // lists the entries of the caller's own namespaces
	"DELETE " + damagedRoute:                      accessAdmin,
	"PUT " + damagedRoute:                         accessAdmin,
}

// tokenRoutes need edit in their namespace even to read (tokens are
// credentials).
const tokenRoutes = "/api/namespaces/:name/tokens"

func accessOf(method, route string) access {
	return routeAccess[method+" "+route]
}

// namespaceOf is the namespace a request is in, and whether it is a
// valid name.
func namespaceOf(c *gin.Context) (string, error) {
	ns := rawNamespace(c)
	if err := namespace.ValidateName(ns); err != nil {
		return ns, fmt.Errorf("%w: %v", ErrBadRequest, strings.TrimPrefix(err.Error(), namespace.ErrInvalid.Error()+": "))
	}
	return ns, nil
}

func rawNamespace(c *gin.Context) string {
	ns := c.Query("namespace")
	if strings.HasPrefix(c.FullPath(), "/api/namespaces/:name") {
		ns = c.Param("name")
	}
	if ns == "" {
		return namespace.Default
	}
	return ns
}

// authorize resolves the request's namespace and checks that the caller
// may do what the route does there: no role, no access (403, the same
// whether or not the namespace exists, so a refusal reveals nothing).
func (s *Server) authorize(c *gin.Context, p identity.Principal) error {
	ns, bad := namespaceOf(c) // a bad name: 403 for who has no role in it (every caller but the admin), 400 for the admin
	write := !isRead(c.Request.Method)
	switch accessOf(c.Request.Method, c.FullPath()) {
	case accessAnyone:
		if bad == nil {
			c.Set(ctxNamespace, ns)
		}
		return nil
	case accessAdmin:
		if !p.Admin {
			return fmt.Errorf("%w: only an admin may do this", ErrForbidden)
		}
		if bad != nil {
			return bad
		}
		c.Set(ctxNamespace, ns)
		return nil
	case accessScheduler:
		c.Set(ctxNamespace, namespace.Default)
		if !p.Can(namespace.Default, write) {
			return fmt.Errorf("%w: the scheduler's own state is for the admin and the default namespace's users", ErrForbidden)
		}
		return nil
	case accessAudit:
		if !p.Admin && len(p.WithRole(true)) == 0 {
			return fmt.Errorf("%w: the audit log is for the admin and the namespaces' editors", ErrForbidden)
		}
		if c.Query("namespace") != "" && !p.Can(ns, true) {
			return s.refuse(p, ns, true)
		}
		if bad != nil {
			return bad
		}
		c.Set(ctxNamespace, ns)
		return nil
	}
	if strings.HasPrefix(c.FullPath(), tokenRoutes) {
		write = true
	}
	if !p.Can(ns, write) {
		return s.refuse(p, ns, write)
	}
	if bad != nil {
		return bad
	}
	c.Set(ctxNamespace, ns)
	if toLeader(c) && s.cluster != nil && !s.cluster.Leading() {
		return nil // the leader this request goes to checks (this instance's copy may not have a new namespace yet)
	}
	exists, err := s.reg.Tenancy().NamespaceExists(c, ns)
	if err != nil {
		return err
	}
	if !exists && !(c.FullPath() == "/api/namespaces/:name" && c.Request.Method == "GET") {
		return fmt.Errorf("%w: namespace '%s' does not exist", ErrNotFound, ns)
	}
	return nil
}

// refuse says why a caller may not act in a namespace, without a word
// about what the namespace holds (or whether it exists).
func (s *Server) refuse(p identity.Principal, ns string, write bool) error {
	if r, ok := p.RoleIn(ns); ok && write {
		if p.Kind == identity.KindGuest {
			return fmt.Errorf("%w: the guest role is read-only", ErrForbidden)
		}
		return fmt.Errorf("%w: %s has the %s role in namespace '%s': the view role is read-only", ErrForbidden, p.Name, r, ns)
	}
	if p.Kind == identity.KindOIDC && len(p.Roles) == 0 {
		return noGroupRole(p)
	}
	return fmt.Errorf("%w: %s has no role in namespace '%s'", ErrForbidden, p.Name, ns)
}

// principal is the caller (authenticated by the auth middleware).
func principal(c *gin.Context) identity.Principal {
	if v, ok := c.Get(ctxPrincipal); ok {
		return v.(identity.Principal)
	}
	return identity.Principal{Name: c.GetString(ctxUser), Kind: identity.KindAnonymous}
}

// nsOf is the request's namespace.
func nsOf(c *gin.Context) string {
	if ns := c.GetString(ctxNamespace); ns != "" {
		return ns
	}
	return namespace.Default
}

// nsFrom is nsOf for a handler's context (the request's gin context, or
// one made by withNamespace).
func nsFrom(ctx context.Context) string {
	if ns, _ := ctx.Value(ctxNamespace).(string); ns != "" {
		return ns
	}
	return namespace.Default
}

// withNamespace makes a context whose requests are in namespace ns, as a
// request authorized there (for checks made outside a request: the
// Kubernetes admission webhook and reconciler).
func withNamespace(ctx context.Context, ns string) context.Context {
	return context.WithValue(ctx, ctxNamespace, ns) //nolint:staticcheck // the key gin's context answers too
}

// regOf is the registry of the request's namespace: its names as the
// namespace knows them, nothing of any other namespace.
func (s *core) regOf(c *gin.Context) *registry.Registry { return s.reg.In(nsOf(c)) }

// regIn is regOf for a handler's context (the request's gin context, or
// one derived from it).
func (s *core) regIn(ctx context.Context) *registry.Registry {
	ns, _ := ctx.Value(ctxNamespace).(string)
	return s.reg.In(ns)
}

// keyOf is the scheduler-wide key of a name in the request's namespace.
func keyOf(c *gin.Context, name string) string { return namespace.Key(nsOf(c), name) }

// localTask checks that a task id belongs to a job of the request's
// namespace; a task of another namespace is not found (nothing about it
// is revealed).
func localTask(c *gin.Context, taskID string) error {
	if !strings.Contains(taskID, namespace.Sep) && nsOf(c) == namespace.Default {
		return nil
	}
	job, _, _ := strings.Cut(taskID, "@-@")
	if _, ok := namespace.Local(job, nsOf(c)); !ok {
		return fmt.Errorf("%w: no task '%s' in namespace '%s'", ErrNotFound, taskID, nsOf(c))
	}
	return nil
}
