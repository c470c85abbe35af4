package crd

import (
	"context"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/registry"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group and Version of the kinds.
const (
	Group   = "elasticjob.io"
	Version = "v1"
)

// Kind is one kind of object and the definitions it holds.
type Kind struct {
	Name     string // CloudJob
	Resource string // cloudjobs
	Def      string // api.DefJob
}

// GVR is the kind's resource.
func (k Kind) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: Group, Version: Version, Resource: k.Resource}
}

// Kinds are the kinds, apps first: a job's app is registered before it.
var Kinds = []Kind{
	{"CloudApp", "cloudapps", api.DefApp},
	{"CloudJob", "cloudjobs", api.DefJob},
	{"CloudWorkflow", "cloudworkflows", api.DefWorkflow},
}

// kindOf finds a kind by its resource.
func kindOf(resource string) (Kind, bool) {
	for _, k := range Kinds {
		if k.Resource == resource {
			return k, true
		}
	}
	return Kind{}, false
}

// NamespaceOf maps a Kubernetes namespace onto the scheduler namespace its
// objects belong to (config.Kube.SchedulerNamespaceOf: the one whose pods
// run there); nil maps each onto the namespace of the same name.
type NamespaceOf func(kubeNamespace string) (string, error)

func (f NamespaceOf) of(kubeNamespace string) (string, error) {
	if f == nil {
		return kubeNamespace, nil
	}
	return f(kubeNamespace)
}

// Definitions is the REST API's side of definitions (api.Server).
type Definitions interface {
	CheckDefinition(ctx context.Context, kind, ns, name string, spec []byte) ([]string, error)
	ApplyDefinition(ctx context.Context, kind, ns, name string, spec []byte, owner registry.Owner) ([]string, error)
	DeleteDefinition(ctx context.Context, kind, ns, name string) error
	StatusOf(ctx context.Context, kind, ns, name string) (api.DefinitionStatus, error)
}

var _ Definitions = (*api.Server)(nil)
