package api

import (
	"context"
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
)

// PodTemplates checks podTemplates against the cluster that runs the pods.
type PodTemplates interface {
	// Check validates the pod a shard of job j (nil: the app alone) would run in, with the
	// app's and the job's podTemplates merged (a server-side dry-run create on Kubernetes).
	// A bad template is ErrBadRequest or the cluster engine's ErrInvalid, naming the field
	// or the API server's reason; a cluster that cannot be asked ErrUnavailable (either). ns is the request's namespace (on
	// Kubernetes, the dry run is made in its Kubernetes namespace).
	Check(ctx context.Context, ns string, a app.Config, j *jobs.Config) error
}

const podTemplateTimeout = 10 * time.Second

// errNoPods refuses a podTemplate on an engine without pods: never silently dropped.
var errNoPods = fmt.Errorf("%w: podTemplate is for the Kubernetes engine (kube_config or kube_in_cluster); "+
	"this scheduler runs its tasks on Mesos, where it would have no effect", ErrBadRequest)

// checkAppTemplate checks an app's podTemplate alone and with each of its jobs' that has one.
func (s *appHandlers) checkAppTemplate(c context.Context, a app.Config) error {
	if s.templates == nil {
		if !a.PodTemplate.Empty() {
			return errNoPods
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(c, podTemplateTimeout)
	defer cancel()
	if err := s.templates.Check(ctx, nsFrom(c), a, nil); err != nil {
		return err
	}
	all, err := s.regIn(c).Config().Jobs(c)
	if err != nil {
		return err
	}
	for _, j := range all {
		if j.AppName != a.AppName || j.PodTemplate.Empty() {
			continue
		}
		if err := s.templates.Check(ctx, nsFrom(c), a, &j); err != nil {
			return fmt.Errorf("with job %s: %w", j.JobName, err)
		}
	}
	return nil
}

// checkJobTemplate checks a job's podTemplate merged over its app's.
func (s *appHandlers) checkJobTemplate(c context.Context, j jobs.Config) error {
	if s.templates == nil {
		if !j.PodTemplate.Empty() {
			return errNoPods
		}
		return nil
	}
	a := app.HTTPOnly()
	if j.AppName != "" {
		var err error
		if a, err = s.regIn(c).Config().App(c, j.AppName); err != nil {
			if j.PodTemplate.Empty() {
				return nil // the job's registration says what is wrong with its app
			}
			return err
		}
	}
	ctx, cancel := context.WithTimeout(c, podTemplateTimeout)
	defer cancel()
	return s.templates.Check(ctx, nsFrom(c), a, &j)
}
