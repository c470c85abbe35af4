package app

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
	"sync"
)

// Config is an app as registered at /config/app/{appName}.
type Config struct {
	AppName                 string  `json:"appName"`
	AppURL                  string  `json:"appURL"`
	BootstrapScript         string  `json:"bootstrapScript"`
	CPUCount                float64 `json:"cpuCount"`
	MemoryMB                float64 `json:"memoryMB"`
	AppCacheEnable          bool    `json:"appCacheEnable"`
	EventTraceSamplingCount int     `json:"eventTraceSamplingCount"`
	// ContainerImage, on Kubernetes, runs the app's tasks in this image
	// (its bootstrap script inside, appURL then optional): the executor is
	// copied into the pod by an init container. Ignored on Mesos.
	ContainerImage string `json:"containerImage,omitempty"`
	// PodTemplate, on Kubernetes, is merged into the pods of the app's tasks (a job's own
	// over it): env from Secrets and ConfigMaps, volumes, service account, placement…
	// (engine/kube/podtemplate.go, docs/kubernetes.md). Refused on Mesos.
	PodTemplate PodTemplate `json:"podTemplate,omitempty"`
}

// Defaults of the optional fields (SPEC.md §2).
const (
	// HTTPOnlyName is the app of HTTP jobs that name none (a reserved name):
	// their executor has no package and charges HTTPOnlyCPUs/HTTPOnlyMemoryMB.
	HTTPOnlyName     = "elasticjob-http"
	HTTPOnlyCPUs     = 0.1
	HTTPOnlyMemoryMB = 32.0

	DefaultCPUCount = 1.0
	DefaultMemoryMB = 128.0
	MaxNameLength   = 100
)

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid app")

// Default returns a Config holding the defaults; decode a request body into
// it so that absent fields keep their defaults.
func Default() Config {
	return Config{CPUCount: DefaultCPUCount, MemoryMB: DefaultMemoryMB, AppCacheEnable: true}
}

// The patterns are compiled on first use (about 3 ms of CPU at every process start
// otherwise, the executor's in every pod).
var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._-]+$`) })

// imageRE is a container image reference: [registry/]path[:tag][@digest].
var imageRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z0-9]([a-z0-9._:/-]*[a-z0-9])?(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$`)
})

// ValidateName checks an app or job name: 1..100 of [A-Za-z0-9._-].
func ValidateName(field, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: %s is required", ErrInvalid, field)
	case len(name) > MaxNameLength:
		return fmt.Errorf("%w: %s must be at most %d characters", ErrInvalid, field, MaxNameLength)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %s %q is not a valid name", ErrInvalid, field, name)
	case !nameRE().MatchString(name):
		return fmt.Errorf("%w: %s %q may only contain letters, digits, '.', '_' and '-'", ErrInvalid, field, name)
	}
	return nil
}

// HTTPOnly is the app HTTP jobs without one run under: one executor per
// agent and namespace (its AppName then the namespace's key of this
// name, jobs.HTTPApp), with no package to fetch.
func HTTPOnly() Config {
	return Config{AppName: HTTPOnlyName, CPUCount: HTTPOnlyCPUs, MemoryMB: HTTPOnlyMemoryMB}
}

// Validate checks every field and names the first bad one. appURL may be
// empty: the package is uploaded later (PUT /api/app/{appName}/package), or
// the app runs only SCRIPT and HTTP jobs, which fetch nothing.
func (c Config) Validate() error {
	if err := ValidateName("appName", c.AppName); err != nil {
		return err
	}
	if c.AppURL != "" {
		if err := ValidateURL(c.AppURL); err != nil {
			return err
		}
	}
	if err := validateScript(c.BootstrapScript); err != nil {
		return err
	}
	if err := ValidateResources(c.CPUCount, c.MemoryMB); err != nil {
		return err
	}
	if c.ContainerImage != "" && (len(c.ContainerImage) > 512 || !imageRE().MatchString(c.ContainerImage)) {
		return fmt.Errorf("%w: containerImage %q is not an image reference like registry.example.com/team/app:1.2", ErrInvalid, c.ContainerImage)
	}
	if err := c.PodTemplate.Validate(); err != nil {
		return err
	}
	if c.EventTraceSamplingCount < 0 {
		return fmt.Errorf("%w: eventTraceSamplingCount must not be negative, got %d", ErrInvalid, c.EventTraceSamplingCount)
	}
	return nil
}

// ValidateURL accepts http, https and file URLs.
func ValidateURL(raw string) error {
	if raw == "" {
		return fmt.Errorf("%w: appURL is required", ErrInvalid)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: appURL %q is not a URL: %v", ErrInvalid, raw, err)
	}
	switch u.Scheme {
	case "http", "https":
		if u.Host == "" {
			return fmt.Errorf("%w: appURL %q has no host", ErrInvalid, raw)
		}
	case "file":
		if u.Path == "" || !strings.HasPrefix(u.Path, "/") {
			return fmt.Errorf("%w: appURL %q must be an absolute file URL like file:///opt/app.tar.gz", ErrInvalid, raw)
		}
	default:
		return fmt.Errorf("%w: appURL %q must use http, https or file", ErrInvalid, raw)
	}
	return nil
}

func validateScript(s string) error {
	if s == "" {
		return fmt.Errorf("%w: bootstrapScript is required", ErrInvalid)
	}
	if strings.HasPrefix(s, "/") || strings.Contains(s, "\x00") {
		return fmt.Errorf("%w: bootstrapScript %q must be a relative path inside the app", ErrInvalid, s)
	}
	// Allow the manual's Windows-looking "bin\start.sh" by treating the
	// first word as the path; extra words are arguments.
	first := strings.Fields(strings.ReplaceAll(s, `\`, "/"))
	if len(first) == 0 {
		return fmt.Errorf("%w: bootstrapScript is required", ErrInvalid)
	}
	if p := path.Clean(first[0]); p == ".." || strings.HasPrefix(p, "../") {
		return fmt.Errorf("%w: bootstrapScript %q must stay inside the app", ErrInvalid, s)
	}
	return nil
}

// The largest cpuCount and memoryMB of an app or a job: far above any
// machine, and small enough that a job's 10,000 shards, summed in
// thousandths of a core and whole MB, stay far inside int64 (1e20 MB was
// refused with an overflowed figure).
const (
	MaxCPUCount = 100_000 // cores
	MaxMemoryMB = 1 << 30 // 1 PiB
)

// ValidateResources checks a cpuCount and a memoryMB against their bounds.
func ValidateResources(cpus, memMB float64) error {
	if !(cpus >= 0.001) {
		return fmt.Errorf("%w: cpuCount must be at least 0.001, got %v", ErrInvalid, cpus)
	}
	if cpus > MaxCPUCount {
		return fmt.Errorf("%w: cpuCount must be at most %d, got %v", ErrInvalid, MaxCPUCount, cpus)
	}
	if !(memMB >= 1) {
		return fmt.Errorf("%w: memoryMB must be at least 1, got %v", ErrInvalid, memMB)
	}
	if memMB > MaxMemoryMB {
		return fmt.Errorf("%w: memoryMB must be at most %d (1 PiB), got %v", ErrInvalid, MaxMemoryMB, memMB)
	}
	return nil
}
