package ejctl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/goccy/go-yaml"
)

// Manifest is what a set of YAML or JSON files declares: apps and jobs,
// with the API's defaults filled in and validated as the API would.
type Manifest struct {
	Apps   []app.Config
	Jobs   []jobs.Config
	source map[string]string // "app/NAME" or "job/NAME" → file (document N)
}

// A file holds one or more documents (YAML "---" separated; JSON is YAML
// too). A document is an app or a job (a "kind: App|Job" member, or told
// apart by jobName), a list of them, or {"apps": […], "jobs": […]}.

// LoadManifests reads files and directories (their *.yaml, *.yml and
// *.json files, recursively, in name order).
func LoadManifests(paths []string) (Manifest, error) {
	m := Manifest{source: map[string]string{}}
	files, err := manifestFiles(paths)
	if err != nil {
		return m, err
	}
	if len(files) == 0 {
		return m, fmt.Errorf("no .yaml, .yml or .json file in %s", strings.Join(paths, ", "))
	}
	for _, f := range files {
		if err := m.loadFile(f); err != nil {
			return m, err
		}
	}
	sort.Slice(m.Apps, func(i, j int) bool { return m.Apps[i].AppName < m.Apps[j].AppName })
	sort.Slice(m.Jobs, func(i, j int) bool { return m.Jobs[i].JobName < m.Jobs[j].JobName })
	return m, nil
}

func manifestFiles(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			out = append(out, p)
			continue
		}
		err = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			switch strings.ToLower(filepath.Ext(q)) {
			case ".yaml", ".yml", ".json":
				if !d.IsDir() {
					out = append(out, q)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (m *Manifest) loadFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for n := 1; ; n++ {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return nil
		}
		where := fmt.Sprintf("%s (document %d)", path, n)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if doc == nil {
			continue
		}
		if err := m.addDoc(doc, where); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
}

func (m *Manifest) addDoc(doc any, where string) error {
	switch d := doc.(type) {
	case []any:
		for i, item := range d {
			if err := m.addDoc(item, where); err != nil {
				return fmt.Errorf("item %d: %w", i+1, err)
			}
		}
		return nil
	case map[string]any:
		apps, hasApps := d["apps"]
		jobList, hasJobs := d["jobs"]
		if hasApps || hasJobs {
			for _, k := range []struct {
				list any
				kind string
			}{{apps, "App"}, {jobList, "Job"}} {
				if err := m.addList(k.list, k.kind, where); err != nil {
					return err
				}
			}
			return nil
		}
		return m.addObject(d, "", where)
	}
	return fmt.Errorf("expected an app or job object, a list of them, or {apps: […], jobs: […]}, got %T", doc)
}

func (m *Manifest) addList(list any, kind, where string) error {
	if list == nil {
		return nil
	}
	items, ok := list.([]any)
	if !ok {
		return fmt.Errorf("%ss must be a list", strings.ToLower(kind))
	}
	for i, it := range items {
		obj, ok := it.(map[string]any)
		if !ok {
			return fmt.Errorf("%ss item %d is not an object", strings.ToLower(kind), i+1)
		}
		if err := m.addObject(obj, kind, where); err != nil {
			return fmt.Errorf("%ss item %d: %w", strings.ToLower(kind), i+1, err)
		}
	}
	return nil
}

// addObject decodes one app or job strictly (an unknown field is an
// error, as in the API) onto its defaults and validates it.
func (m *Manifest) addObject(obj map[string]any, kind, where string) error {
	if k, ok := obj["kind"]; ok {
		s, _ := k.(string)
		kind = strings.ToLower(s)
		delete(obj, "kind")
	} else if kind == "" {
		kind = "app"
		if _, isJob := obj["jobName"]; isJob {
			kind = "job"
		}
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	switch strings.ToLower(kind) {
	case "app":
		a := app.Default()
		if err := strictJSON(b, &a); err != nil {
			return fmt.Errorf("app: %w", err)
		}
		if err := validateApp(a); err != nil {
			return err
		}
		m.Apps = append(m.Apps, a)
		return m.claim("app/"+a.AppName, where)
	case "job":
		j := jobs.Default()
		if err := strictJSON(b, &j); err != nil {
			return fmt.Errorf("job: %w", err)
		}
		if err := j.Validate(); err != nil {
			return err
		}
		m.Jobs = append(m.Jobs, j)
		return m.claim("job/"+j.JobName, where)
	}
	return fmt.Errorf("kind must be App or Job, got %q", kind)
}

// validateApp is the API's check, except that appURL may be left out: the
// package is then published with "ejctl app publish" and apply keeps the
// URL the scheduler set.
func validateApp(a app.Config) error {
	if a.AppURL == "" {
		a.AppURL = "http://placeholder.invalid/"
	}
	return a.Validate()
}

// from says where the files declare an app or job: " (FILE, document N)",
// or "" for a manifest not read from files.
func (m Manifest) from(kind, name string) string {
	if where := m.source[kind+"/"+name]; where != "" {
		return " (" + strings.Replace(strings.TrimSuffix(where, ")"), " (document", ", document", 1) + ")"
	}
	return ""
}

func (m *Manifest) claim(key, where string) error {
	if prev, dup := m.source[key]; dup {
		return fmt.Errorf("%s is declared twice: in %s and here", strings.Replace(key, "/", " ", 1), prev)
	}
	m.source[key] = where
	return nil
}

func strictJSON(b []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}
