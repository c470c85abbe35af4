package api

import (
	"net/http"
	"time"

	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/nsusage"
	"github.com/gin-gonic/gin"
)

// usageRoute is GET /api/namespaces/{name}/usage: the leader keeps the
// series, so a standby forwards the read to it (forward.go).
const usageRoute = "/api/namespaces/:name/usage"

// namespaceUsage is a namespace's usage against its guarantee and limit
// over the last hour, and the on-time rate of its cron fires.
type namespaceUsage struct {
	Namespace string               `json:"namespace"`
	Guarantee *namespace.Resources `json:"guarantee,omitempty"` // absent: none
	Limit     *namespace.Resources `json:"limit,omitempty"`     // absent: none
	Weight    float64              `json:"weight"`
	// PerCluster are its guarantee and limit on each cluster named (absent: none), shown
	// beside the global ones on the console's namespace page.
	PerCluster map[string]namespace.ClusterCapacity `json:"perCluster,omitempty"`
	InUse      namespace.Resources                  `json:"inUse"` // now: the running tasks (from the registry) and the idle executors
	// IdleExecutors are its apps' executors up without a task, charged to
	// it until they exit (absent: none).
	IdleExecutors []IdleExecutor `json:"idleExecutors,omitempty"`
	// Series is sampled by the leader every EverySeconds, the last hour
	// kept in memory since Since (a new leader starts it again).
	EverySeconds int              `json:"everySeconds"`
	Since        *time.Time       `json:"since,omitempty"` // absent: no leader keeps one here
	Samples      []nsusage.Sample `json:"samples"`
	OnTime       onTimeView       `json:"onTime"`
	// LateRuns are its latest runs launched more than a second after they
	// were due, newest first, each with why (the leader's, this term).
	LateRuns []nsusage.LateRun `json:"lateRuns"`
	Engine   *EngineCap        `json:"engine,omitempty"` // Kubernetes: its namespace and quota
}

// EngineCap is what the engine allows a namespace (Options.Tenancy.EngineCaps).
type EngineCap struct {
	KubernetesNamespace string `json:"kubernetesNamespace,omitempty"`
	// Quota is the most its shards may hold under its Kubernetes namespace's ResourceQuotas
	// now (absent: none caps it), named by QuotaName with its figures.
	Quota     *namespace.Resources `json:"quota,omitempty"`
	QuotaName string               `json:"quotaName,omitempty"`
	// Closed says why none of its work can launch (its Kubernetes namespace is missing).
	Closed string `json:"closed,omitempty"`
}

// onTimeView is the share of the namespace's cron fires admitted within
// BoundSeconds of their instant, over the samples' hour.
type onTimeView struct {
	BoundSeconds float64  `json:"boundSeconds"`
	Fires        int      `json:"fires"`
	OnTime       int      `json:"onTime"`
	Rate         *float64 `json:"rate,omitempty"` // absent: no fire admitted
}

func (s *tenancyHandlers) namespaceUsage(c *gin.Context) {
	name := nsOf(c)
	rec, err := s.reg.Tenancy().Namespace(c, name)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	in, err := s.reg.In(name).Tenancy().InUse(c)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	idle := s.idle(c, name)
	out := namespaceUsage{Namespace: name, Guarantee: rec.Guarantee, Limit: rec.Limit, Weight: rec.EffectiveWeight(), PerCluster: rec.PerCluster,
		InUse: withIdle(in, idle), IdleExecutors: idle,
		EverySeconds: int(nsusage.Every / time.Second), Samples: []nsusage.Sample{}, LateRuns: []nsusage.LateRun{},
		OnTime: onTimeView{BoundSeconds: nsusage.OnTimeBound.Seconds()}}
	if s.nsSeries != nil {
		snap := s.nsSeries.Snapshot(name)
		if !snap.Since.IsZero() {
			out.Since = &snap.Since
		}
		out.Samples, out.OnTime.Fires, out.OnTime.OnTime = snap.Samples, snap.Fires, snap.OnTime
		if snap.Late != nil {
			out.LateRuns = snap.Late
		}
		if r, ok := snap.Rate(); ok {
			out.OnTime.Rate = &r
		}
	}
	if s.engineCaps != nil {
		out.Engine = s.engineCaps(name)
	}
	c.JSON(http.StatusOK, out)
}
