package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/workflow"
)

// definitionHandlers check, apply and delete the definitions of Kubernetes objects
// (apps, jobs, workflows) and say their status: what is not HTTP (crd.Definitions).
type definitionHandlers struct {
	*core
	*guideHandlers
	*workflowHandlers
	hist requestHistory // nil: history off
}

// Definitions from Kubernetes objects (docs/kubernetes.md, "Definitions as
// Kubernetes objects"): the admission webhook checks an object's spec and
// the leader's reconciler writes it, both through the REST API's own
// decoding and checks, so an object is refused exactly when a REST call
// with the same body would be, with the same message.

// Kinds of definitions, as the registry's owner records name them.
const (
	DefApp      = "app"
	DefJob      = "job"
	DefWorkflow = "workflow"
)

// nameField is the spec field that holds a definition's name.
func nameField(kind string) string {
	switch kind {
	case DefApp:
		return "appName"
	case DefJob:
		return "jobName"
	}
	return "name"
}

// ErrorMessage is the status and the message the REST API answers err
// with.
func ErrorMessage(err error) (int, string) {
	for _, s := range statusOf {
		if errors.Is(err, s.err) {
			return s.code, strings.TrimPrefix(err.Error(), s.err.Error()+": ")
		}
	}
	return http.StatusInternalServerError, err.Error()
}

// withName sets the spec's name field to the object's name; a spec that
// names another is refused.
func withName(spec []byte, field, name string) ([]byte, error) {
	var m map[string]json.RawMessage
	if len(spec) == 0 || string(spec) == "null" {
		m = map[string]json.RawMessage{}
	} else if err := decodeLoose(spec, &m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	if raw, ok := m[field]; ok {
		var got string
		if err := json.Unmarshal(raw, &got); err != nil || got != name {
			return nil, fmt.Errorf("%w: spec.%s must be the object's name %q (or be left out)", ErrBadRequest, field, name)
		}
	}
	b, _ := json.Marshal(name)
	m[field] = b
	return json.Marshal(m)
}

// definition is a decoded, checked spec and whether it exists already.
type definition struct {
	app      app.Config
	job      jobs.Config
	workflow workflow.Config
	exists   bool
	same     bool // exists as it is (checkDefinition's orSame)
}

// CheckDefinition checks an object's spec as the REST API checks the
// registration of a definition of kind named name in namespace ns (its
// update when it exists already). It returns the warnings the API would
// send as Warning headers; ErrorMessage words its error as the API does.
func (s *definitionHandlers) CheckDefinition(ctx context.Context, kind, ns, name string, spec []byte) ([]string, error) {
	_, warns, err := s.checkDefinition(withNamespace(ctx, ns), kind, name, spec, false)
	return warns, err
}

// checkDefinition decodes and checks a spec; with orSame, a spec equal to
// the registered definition is not checked again (d.same): a new leader
// re-reading every object asks nothing of the cluster for them.
func (s *definitionHandlers) checkDefinition(ctx context.Context, kind, name string, spec []byte, orSame bool) (definition, []string, error) {
	body, err := withName(spec, nameField(kind), name)
	if err != nil {
		return definition{}, nil, err
	}
	if _, err := s.reg.Tenancy().Namespace(ctx, nsFrom(ctx)); err != nil {
		return definition{}, nil, fmt.Errorf("%w (create it first: ejctl ns create %s)", err, nsFrom(ctx))
	}
	switch kind {
	case DefApp:
		return s.checkAppDefinition(ctx, name, body, orSame)
	case DefJob:
		return s.checkJobDefinition(ctx, name, body, orSame)
	case DefWorkflow:
		return s.checkWorkflowDefinition(ctx, name, body, orSame)
	}
	return definition{}, nil, fmt.Errorf("%w: no definitions of kind %q", ErrBadRequest, kind)
}

func (s *definitionHandlers) checkAppDefinition(ctx context.Context, name string, body []byte, orSame bool) (definition, []string, error) {
	var d definition
	d.app = app.Default()
	body, err := unquotedBody(body, appNumbers, appBooleans) // as PUT /api/app
	if err == nil {
		err = decodeStrict(body, &d.app)
	}
	if err != nil {
		return d, nil, err
	}
	d.exists, err = found(s.regIn(ctx).Config().App(ctx, name))
	if err != nil {
		return d, nil, err
	}
	if d.same = orSame && d.exists && s.unchanged(ctx, DefApp, name, d); d.same {
		return d, nil, nil
	}
	if d.exists {
		err = s.checkUpdateApp(ctx, d.app)
	} else {
		err = s.checkAddApp(ctx, d.app)
	}
	var warns []string
	if err == nil {
		s.warnAppURL(d.app, func(m string) { warns = append(warns, m) })
	}
	return d, warns, err
}

func (s *definitionHandlers) checkJobDefinition(ctx context.Context, name string, body []byte, orSame bool) (definition, []string, error) {
	var d definition
	var warns []string
	warn := func(m string) { warns = append(warns, m) }
	d.job = jobs.Default()
	body, lf, err := legacyBody(body)
	if err == nil {
		err = decodeStrict(body, &d.job)
	}
	if err == nil {
		lf.apply(&d.job)
		err = s.checkLegacyApp(ctx, lf, d.job)
	}
	if err != nil {
		return d, nil, err
	}
	if d.exists, err = found(s.regIn(ctx).Config().Job(ctx, name)); err != nil {
		return d, nil, err
	}
	if d.same = orSame && d.exists && s.unchanged(ctx, DefJob, name, d); d.same {
		return d, nil, nil
	}
	if d.exists {
		err = s.checkJob(ctx, d.job, warn)
	} else {
		err = s.checkNewJob(ctx, d.job, warn)
	}
	return d, warns, err
}

func (s *definitionHandlers) checkWorkflowDefinition(ctx context.Context, name string, body []byte, orSame bool) (definition, []string, error) {
	var d definition
	d.workflow = workflow.Default()
	if err := decodeStrict(body, &d.workflow); err != nil {
		return d, nil, err
	}
	var err error
	if d.exists, err = found(s.regIn(ctx).Flows().Workflow(ctx, name)); err != nil {
		return d, nil, err
	}
	for i := range d.workflow.Nodes { // as checkWorkflow stores them
		d.workflow.Nodes[i].Trigger = d.workflow.Nodes[i].RuleOf()
	}
	if d.same = orSame && d.exists && s.unchanged(ctx, DefWorkflow, name, d); d.same {
		return d, nil, nil
	}
	return d, nil, s.checkWorkflow(ctx, &d.workflow)
}

// found turns a read into whether it found its definition.
func found[T any](_ T, err error) (bool, error) {
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, registry.ErrAppNotFound), errors.Is(err, registry.ErrJobNotFound), errors.Is(err, workflow.ErrNotFound):
		return false, nil
	}
	return false, err
}

// ApplyDefinition checks an object's spec as CheckDefinition does and
// registers it (or updates what it names: a definition registered through
// the API before is adopted), recording owner as its owner first, so no
// API call changes it meanwhile.
func (s *definitionHandlers) ApplyDefinition(ctx context.Context, kind, ns, name string, spec []byte, owner registry.Owner) ([]string, error) {
	ctx = withNamespace(ctx, ns)
	d, warns, err := s.checkDefinition(ctx, kind, name, spec, true)
	if err != nil {
		return warns, err
	}
	if cur, ok, err := s.reg.Config().OwnerOf(ctx, kind, ns, name); err != nil {
		return warns, err
	} else if !ok || cur != owner {
		if err := s.reg.Config().SetOwner(ctx, kind, ns, name, owner); err != nil {
			return warns, err
		}
	}
	reg := s.regIn(ctx)
	if d.same {
		return warns, nil // an update would reschedule the job for nothing
	}
	switch {
	case kind == DefApp && d.exists:
		err = reg.Config().UpdateApp(ctx, d.app)
	case kind == DefApp:
		err = reg.Config().AddApp(ctx, d.app)
	case kind == DefJob && d.exists:
		err = reg.Config().UpdateJobAt(ctx, d.job, s.clock.Now())
	case kind == DefJob:
		err = s.addJob(ctx, d.job)
	case d.exists:
		err = reg.Flows().UpdateWorkflow(ctx, d.workflow)
	default:
		err = reg.Flows().AddWorkflow(ctx, d.workflow)
	}
	if err == nil && s.ops != nil {
		s.ops.Wake()
	}
	return warns, err
}

// unchanged reports whether the registry holds d already.
func (s *definitionHandlers) unchanged(ctx context.Context, kind, name string, d definition) bool {
	var cur, next any
	var err error
	switch kind {
	case DefApp:
		cur, err = s.regIn(ctx).Config().App(ctx, name)
		next = d.app
	case DefJob:
		cur, err = s.regIn(ctx).Config().Job(ctx, name)
		next = d.job
	default:
		cur, err = s.regIn(ctx).Flows().Workflow(ctx, name)
		next = d.workflow
	}
	if err != nil {
		return false
	}
	a, err1 := json.Marshal(cur)
	b, err2 := json.Marshal(next)
	return err1 == nil && err2 == nil && string(a) == string(b)
}

// DeleteDefinition deregisters a definition whose object was deleted (an
// app with its jobs, a job even when workflows run it: the object is gone)
// and forgets its owner. A definition already gone is no error.
func (s *definitionHandlers) DeleteDefinition(ctx context.Context, kind, ns, name string) error {
	ctx = withNamespace(ctx, ns)
	reg := s.regIn(ctx)
	var err error
	switch kind {
	case DefApp:
		_, err = reg.Config().DeleteApp(ctx, name)
	case DefJob:
		err = reg.Config().DeleteJob(ctx, name)
	default:
		err = reg.Flows().DeleteWorkflow(ctx, name, s.clock.Now())
	}
	if _, err := found(struct{}{}, err); err != nil {
		return err
	}
	return s.reg.Config().DropOwner(ctx, kind, ns, name)
}
