package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/round"
	"github.com/gin-gonic/gin"
)

// The handlers are grouped by concern, each group its own small type holding what it uses
// (chi's one struct per resource, Nomad's command/agent file per endpoint); Server keeps
// the route table (routes.go) and the middleware every request passes (auth, audit,
// forwarding). A group that calls another's checks embeds it, so a handler's body reads
// the same in whichever group it lives:
//
//	group               file(s)                                             holds
//	core                core.go, access.go, inuse.go, auth.go (authenticate) registry, clock, log, body limit, credentials
//	live                core.go                                             the running scheduler and engine (either may be nil)
//	appHandlers         apps.go, appurl.go, packages.go, podtemplates.go    live, file URLs refused, packages, pod templates
//	scheduleHandlers    calendars.go, cron.go                               time zone, cron jitter
//	jobHandlers         jobs.go, legacy.go, fits.go, estimates.go           apps, schedules, live, keyring, typicals, trigger metrics
//	runHandlers         runs.go, results.go, tasklog.go, killrun.go,        live, history
//	                    durations.go, deadlines.go
//	guideHandlers       guide.go                                            jobs, history
//	workflowHandlers    workflows.go, workflowruns.go, workflowhistory.go   schedules, history
//	backfillHandlers    backfills.go                                        jobs
//	tenancyHandlers     namespaces.go, nsusage.go, secrets.go,              keyring, tenant isolation, usage series, engine caps
//	                    secretfetch.go
//	operateHandlers     operate.go, replicated.go, damaged.go, executors.go live, replicated store, reconcile throttle
//	consoleHandlers     console.go, oidc.go, metricsaccess.go, pprof.go     client address
//	definitionHandlers  definitions.go, defstatus.go                        guide (jobs, apps), workflows, history

// core is what every group reads: the registry (through the request's namespace,
// access.go), the clock, the logger, the body limit and the credentials.
type core struct {
	reg     *registry.Registry
	clock   clock.Clock
	log     *slog.Logger
	maxBody int64
	auth    *Auth
}

// live is the running scheduler and its engine, either nil until it is up.
type live struct {
	ops Operations
	eng Engine
}

// checkNotOwned refuses (409) a change through the API of a definition a
// Kubernetes object owns: it is changed in the object (kubectl, git).
func (s *core) checkNotOwned(ctx context.Context, kind, name string) error {
	o, ok, err := s.reg.Config().OwnerOf(ctx, kind, nsFrom(ctx), name)
	if err != nil || !ok {
		return err
	}
	return fmt.Errorf("%w: %s '%s' is owned by the Kubernetes object %s (elasticjob.io/v1); change it there (kubectl apply, or in git for Argo CD/Flux), not through the API",
		ErrConflict, kind, name, o)
}

func (s *core) checkExists(c *gin.Context, kind string) (string, error) {
	if kind == "app" {
		name := c.Param("appName")
		_, err := s.regIn(c).Config().App(c, name)
		return name, err
	}
	name := c.Param("jobName")
	_, err := s.regIn(c).Config().Job(c, name)
	return name, err
}

// listWithDisabled answers a list whose rows carry their disable flags.
func (s *core) listWithDisabled(c *gin.Context, kind string, n int, row func(i int, off map[string]bool) any) {
	off, err := s.regIn(c).Config().Disabled(c, kind)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	rows := make([]any, n)
	for i := range rows {
		rows[i] = row(i, off)
	}
	c.JSON(http.StatusOK, rows)
}

func (s *core) waitView(ctx context.Context, w queue.Wait) waitView {
	w = round.Localize(redactorFrom(ctx).wait(w), nsFrom(ctx))
	return waitView{Wait: w, Summary: round.Summary(w, s.clock.Now())}
}

func (s *live) opsOrErr() (Operations, error) {
	if s.ops == nil {
		return nil, fmt.Errorf("%w: the scheduler is not running", ErrUnavailable)
	}
	return s.ops, nil
}

func (s *live) engineOrErr() (Engine, error) {
	if s.eng == nil {
		return nil, fmt.Errorf("%w: the scheduler is not running", ErrUnavailable)
	}
	return s.eng, nil
}
