package ejctl

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// namespaceView is a row of GET /api/namespaces.
type namespaceView struct {
	Name      string     `json:"name"`
	Guarantee *resources `json:"guarantee,omitempty"`
	Limit     *resources `json:"limit,omitempty"`
	Weight    float64    `json:"weight,omitempty"`
	Jitter    string     `json:"jitter,omitempty"`
	Clusters  []string   `json:"clusters,omitempty"`
	// PerCluster are its guarantee and limit on each cluster named.
	PerCluster map[string]clusterCapacity `json:"perCluster,omitempty"`
	Caps       *hostCaps                  `json:"caps,omitempty"`
	Role       string                     `json:"role"`
	Usage      struct {
		Apps         int       `json:"apps"`
		Jobs         int       `json:"jobs"`
		Workflows    int       `json:"workflows"`
		RunningTasks int       `json:"runningTasks"`
		Queued       int       `json:"queued"`
		InUse        resources `json:"inUse"`
	} `json:"usage"`
}

type resources struct {
	CPUCount float64 `json:"cpuCount"`
	MemoryMB float64 `json:"memoryMB"`
}

type clusterCapacity struct {
	Guarantee *resources `json:"guarantee,omitempty"`
	Limit     *resources `json:"limit,omitempty"`
}

// perClusterWords words a namespace's per-cluster capacities, by cluster name: "-" for
// none, else "k8s-prod: guarantee 2 CPU / 1024 MB, limit -; …".
func perClusterWords(pc map[string]clusterCapacity) string {
	if len(pc) == 0 {
		return "-"
	}
	names := make([]string, 0, len(pc))
	for n := range pc {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s: guarantee %s, limit %s", n, pc[n].Guarantee.String(), pc[n].Limit.String())
	}
	return strings.Join(parts, "; ")
}

// mergedPerCluster is cur with the --cluster-guarantee and --cluster-limit flags
// applied: each NAME=CPUS,MEM sets that cluster's guarantee (or limit), NAME= clears
// it; a cluster left with neither is dropped.
func mergedPerCluster(cur map[string]clusterCapacity, guarantees, limits []string) (map[string]clusterCapacity, error) {
	out := map[string]clusterCapacity{}
	for n, cc := range cur {
		out[n] = cc
	}
	apply := func(flag string, vals []string, set func(cc *clusterCapacity, r *resources)) error {
		for _, v := range vals {
			name, amount, ok := strings.Cut(v, "=")
			if !ok || name == "" {
				return fmt.Errorf("--%s %q: want CLUSTER=CPUS,MEMORY_MB (k8s-prod=2,4096), or CLUSTER= to clear it", flag, v)
			}
			cc := out[name]
			if amount == "" {
				set(&cc, nil)
			} else {
				cpu, mem, ok := strings.Cut(amount, ",")
				c, err1 := strconv.ParseFloat(cpu, 64)
				m, err2 := strconv.ParseFloat(mem, 64)
				if !ok || err1 != nil || err2 != nil {
					return fmt.Errorf("--%s %q: want CLUSTER=CPUS,MEMORY_MB (k8s-prod=2,4096), or CLUSTER= to clear it", flag, v)
				}
				set(&cc, &resources{CPUCount: c, MemoryMB: m})
			}
			out[name] = cc
		}
		return nil
	}
	if err := apply("cluster-guarantee", guarantees, func(cc *clusterCapacity, r *resources) { cc.Guarantee = r }); err != nil {
		return nil, err
	}
	if err := apply("cluster-limit", limits, func(cc *clusterCapacity, r *resources) { cc.Limit = r }); err != nil {
		return nil, err
	}
	for n, cc := range out {
		if cc.Guarantee == nil && cc.Limit == nil {
			delete(out, n)
		}
	}
	return out, nil
}

func (r *resources) String() string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%g CPU / %g MB", r.CPUCount, r.MemoryMB)
}

func (c tenancyGroup) nsCmd() *cobra.Command {
	cmd := group("ns", "Namespaces: list, show, create, set, delete, pick the default")
	cmd.Aliases = []string{"namespace", "namespaces"}
	cmd.AddCommand(c.nsLsCmd(), c.nsGetCmd(), c.nsPutCmd("create"), c.nsPutCmd("set"), c.nsRmCmd(), c.nsUseCmd())
	return cmd
}

func (c tenancyGroup) nsLsCmd() *cobra.Command {
	return &cobra.Command{
		Use: "ls", Short: "The namespaces you have a role in (every one for the admin), with what they hold and use", Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var all []namespaceView
			if err := c.client.get(cmd.Context(), "/api/namespaces", nil, &all); err != nil {
				return err
			}
			if c.json() {
				return c.printJSON(all)
			}
			rows := make([][]string, 0, len(all))
			for _, n := range all {
				mark := ""
				if n.Name == c.settings.Namespace {
					mark = "*"
				}
				rows = append(rows, []string{mark + n.Name, n.Role, strconv.Itoa(n.Usage.Apps), strconv.Itoa(n.Usage.Jobs),
					strconv.Itoa(n.Usage.RunningTasks), n.Usage.InUse.String(), n.Guarantee.String(), n.Limit.String(), weight(n.Weight)})
			}
			return c.table([]string{"NAMESPACE", "ROLE", "APPS", "JOBS", "RUNNING", "IN USE", "GUARANTEE", "LIMIT", "WEIGHT"}, rows)
		},
	}
}

func weight(w float64) string {
	if w == 0 {
		return "1"
	}
	return strconv.FormatFloat(w, 'g', -1, 64)
}

func (c tenancyGroup) nsGetCmd() *cobra.Command {
	return &cobra.Command{
		Use: "get NAME", Short: "One namespace", Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var n namespaceView
			if err := c.client.get(cmd.Context(), "/api/namespaces/"+seg(args[0]), nil, &n); err != nil {
				return err
			}
			if c.json() {
				return c.printJSON(n)
			}
			c.say("namespace %s (your role: %s)\n  holds: %d apps, %d jobs, %d workflows; %d running tasks, %d queued\n  in use: %s\n  guarantee: %s, limit: %s, weight %s\n  per cluster: %s",
				n.Name, n.Role, n.Usage.Apps, n.Usage.Jobs, n.Usage.Workflows, n.Usage.RunningTasks, n.Usage.Queued,
				n.Usage.InUse.String(), n.Guarantee.String(), n.Limit.String(), weight(n.Weight), perClusterWords(n.PerCluster))
			return nil
		},
	}
}

// hostCaps are a namespace's own caps on a host (nil field: the
// scheduler's setting).
type hostCaps struct {
	PidsMax  *int64 `json:"pidsMax,omitempty"`
	MemoryMB *int64 `json:"memoryMB,omitempty"`
	DiskMB   *int64 `json:"diskMB,omitempty"`
}

// String is "pids 100, memory default, disk 0 (none)".
func (h *hostCaps) String() string {
	if h == nil {
		h = &hostCaps{}
	}
	one := func(v *int64, unit string) string {
		switch {
		case v == nil:
			return "default"
		case *v == 0:
			return "none"
		}
		return strconv.FormatInt(*v, 10) + unit
	}
	return "pids " + one(h.PidsMax, "") + ", memory " + one(h.MemoryMB, " MB") + ", disk " + one(h.DiskMB, " MB")
}

// capFlags are ns set's flags of the host caps, by the caps' field.
var capFlags = []struct{ flag, usage string }{
	{"pids-max", "most processes and threads of all its executors and tasks on a host (0: no cap; default: the scheduler's namespace_pids_max)"},
	{"mem-cap", "most memory in MB of all its executors and tasks on a host (0: no cap; default: namespace_mem_mb)"},
	{"disk-cap", "most disk in MB its live sandboxes and app cache hold on a host (0: no cap; default: namespace_disk_mb)"},
}

// mergedCaps is cur with the changed cap flags applied: a number, or
// "default" for the scheduler's setting.
func mergedCaps(cur *hostCaps, changed func(string) bool, vals map[string]*string) (*hostCaps, error) {
	out := hostCaps{}
	if cur != nil {
		out = *cur
	}
	fields := map[string]**int64{"pids-max": &out.PidsMax, "mem-cap": &out.MemoryMB, "disk-cap": &out.DiskMB}
	for _, f := range capFlags {
		if !changed(f.flag) {
			continue
		}
		v := strings.TrimSpace(*vals[f.flag])
		if v == "default" {
			*fields[f.flag] = nil
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("--%s %q: give a number from 0 (no cap) up, or default", f.flag, v)
		}
		*fields[f.flag] = &n
	}
	if out.PidsMax == nil && out.MemoryMB == nil && out.DiskMB == nil {
		return nil, nil
	}
	return &out, nil
}

// nsPutCmd is create (refused when the namespace exists) or set.
func (c tenancyGroup) nsPutCmd(verb string) *cobra.Command {
	var gCPU, gMem, lCPU, lMem, w float64
	var jitter string
	var clusters, clusterG, clusterL []string
	var replace bool
	capVals := map[string]*string{}
	cmd := &cobra.Command{
		Use: verb + " NAME", Short: map[string]string{"create": "Create a namespace (admin)", "set": "Change a namespace's guarantee, limit, weight, jitter, clusters or host caps (admin): the fields without a flag keep their values (--replace: the whole record)"}[verb],
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			path := "/api/namespaces/" + seg(args[0])
			// set changes the fields its flags name and keeps the others
			// (the API's PUT replaces the record whole, as --replace does).
			var cur namespaceView
			if verb == "set" && !replace {
				if err := c.client.get(cmd.Context(), path, nil, &cur); err != nil {
					if IsNotFound(err) {
						return fmt.Errorf("no namespace %s (ejctl ns create %s makes it)", args[0], args[0])
					}
					return err
				}
			}
			body := mergedNamespace(cur, f.Changed, resources{gCPU, gMem}, resources{lCPU, lMem}, w, jitter, clusters)
			caps, err := mergedCaps(cur.Caps, f.Changed, capVals)
			if err != nil {
				return err
			}
			if caps != nil {
				body["caps"] = caps
			}
			pc, err := mergedPerCluster(cur.PerCluster, clusterG, clusterL)
			if err != nil {
				return err
			}
			if len(pc) > 0 {
				body["perCluster"] = pc
			}
			if verb == "create" {
				var existing namespaceView
				err := c.client.get(cmd.Context(), path, nil, &existing)
				if err == nil {
					return fmt.Errorf("namespace %s exists already (ejctl ns set %s changes it)", args[0], args[0])
				}
				if !IsNotFound(err) {
					return err
				}
			}
			var n namespaceView
			if err := c.client.sendJSON(cmd.Context(), http.MethodPut, path, body, &n); err != nil {
				return err
			}
			if c.json() {
				return c.printJSON(n)
			}
			c.say("namespace %s: guarantee %s, limit %s, weight %s, jitter %s, clusters %s, per cluster %s, caps %s", n.Name, n.Guarantee.String(), n.Limit.String(),
				weight(n.Weight), orDash(n.Jitter), orDash(strings.Join(n.Clusters, ",")), perClusterWords(n.PerCluster), n.Caps.String())
			return nil
		},
	}
	f := cmd.Flags()
	f.Float64Var(&gCPU, "guarantee-cpu", 0, "CPUs guaranteed")
	f.Float64Var(&gMem, "guarantee-mem", 0, "memory guaranteed, MB")
	f.Float64Var(&lCPU, "limit-cpu", 0, "most CPUs it may hold")
	f.Float64Var(&lMem, "limit-mem", 0, "most memory it may hold, MB")
	f.Float64Var(&w, "weight", 1, "its share among borrowers")
	f.StringVar(&jitter, "jitter", "", "the jitter window of its jobs and workflows that set none (30m; docs/jobs.md)")
	f.StringSliceVar(&clusters, "clusters", nil, "the clusters its jobs that name none run on, in order of preference (k8s-prod,mesos-dc1; \"\": any; docs/clusters.md)")
	f.StringArrayVar(&clusterG, "cluster-guarantee", nil, "its guarantee on one cluster, CLUSTER=CPUS,MEMORY_MB (CLUSTER= clears it); repeat per cluster (docs/clusters.md)")
	f.StringArrayVar(&clusterL, "cluster-limit", nil, "the most it may hold on one cluster, CLUSTER=CPUS,MEMORY_MB (CLUSTER= clears it); repeat per cluster")
	for _, cf := range capFlags {
		capVals[cf.flag] = f.String(cf.flag, "", cf.usage)
	}
	if verb == "set" {
		f.BoolVar(&replace, "replace", false, "replace the whole record: fields without a flag take their defaults (no guarantee, no limit, weight 1)")
	}
	return cmd
}

// mergedNamespace is the record to PUT: cur's fields (zero: none) with
// those the changed flags name replaced; a flag of a pair (cpu, mem)
// keeps the pair's other half.
func mergedNamespace(cur namespaceView, changed func(string) bool, g, l resources, w float64, jitter string, clusters []string) map[string]any {
	body := map[string]any{}
	pair := func(key string, have *resources, want resources) {
		if !changed(key+"-cpu") && !changed(key+"-mem") {
			if have != nil {
				body[key] = *have
			}
			return
		}
		out := resources{}
		if have != nil {
			out = *have
		}
		if changed(key + "-cpu") {
			out.CPUCount = want.CPUCount
		}
		if changed(key + "-mem") {
			out.MemoryMB = want.MemoryMB
		}
		body[key] = out
	}
	pair("guarantee", cur.Guarantee, g)
	pair("limit", cur.Limit, l)
	switch {
	case changed("weight"):
		body["weight"] = w
	case cur.Weight != 0:
		body["weight"] = cur.Weight
	}
	switch {
	case changed("jitter"):
		body["jitter"] = jitter
	case cur.Jitter != "":
		body["jitter"] = cur.Jitter
	}
	switch {
	case changed("clusters"):
		var named []string
		for _, c := range clusters {
			if c != "" {
				named = append(named, c)
			}
		}
		body["clusters"] = named
	case len(cur.Clusters) > 0:
		body["clusters"] = cur.Clusters
	}
	return body
}

func (c tenancyGroup) nsRmCmd() *cobra.Command {
	return &cobra.Command{
		Use: "rm NAME", Short: "Delete an empty namespace (admin); refused while it holds anything, naming what", Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := c.client.del(cmd.Context(), "/api/namespaces/"+seg(args[0])); err != nil {
				return err
			}
			c.say("namespace %s deleted", args[0])
			return nil
		},
	}
}

func (c tenancyGroup) nsUseCmd() *cobra.Command {
	return &cobra.Command{
		Use: "use NAME", Short: "Make NAME the namespace commands act in (saved in the config file; -n overrides it)", Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if c.settings.ConfigPath == "" {
				return fmt.Errorf("no config file: set HOME, XDG_CONFIG_HOME or EJCTL_CONFIG (or pass -n to each command)")
			}
			file, err := loadConfig(c.settings.ConfigPath)
			if err != nil {
				return err
			}
			file.Namespace = args[0]
			if file.Addr == "" {
				file.Addr = c.settings.Addr
			}
			if err := saveConfig(c.settings.ConfigPath, file); err != nil {
				return err
			}
			c.say("namespace %s is the default of %s", args[0], c.settings.ConfigPath)
			return nil
		},
	}
}

// apiToken is a namespace API token as the API lists it.
type apiToken struct {
	ID        string     `json:"id"`
	Namespace string     `json:"namespace"`
	Name      string     `json:"name"`
	Role      string     `json:"role"`
	CreatedBy string     `json:"createdBy"`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt *time.Time `json:"expiresAt"`
	Token     string     `json:"token,omitempty"`
}

func (c tenancyGroup) tokenCmd() *cobra.Command {
	cmd := group("token", "The namespace's API tokens for CI (you need the edit role): create, ls, revoke")
	var role string
	var ttl time.Duration
	create := &cobra.Command{
		Use: "create NAME", Short: "Make a token (printed once: keep it; pass it as --token or EJCTL_TOKEN)", Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			body := map[string]any{"name": args[0], "role": role}
			if ttl > 0 {
				body["expiresAt"] = c.now().Add(ttl).UTC()
			}
			var t apiToken
			if err := c.client.sendJSONOnce(cmd.Context(), http.MethodPost, c.tokensPath(), body, &t); err != nil {
				return err
			}
			if c.json() {
				return c.printJSON(t)
			}
			fmt.Fprintln(c.env.Stdout, t.Token)
			fmt.Fprintf(c.env.Stderr, "ejctl: token %s (%s, role %s in namespace %s): shown this once; revoke with: ejctl -n %s token revoke %s\n",
				t.Name, t.ID, t.Role, t.Namespace, t.Namespace, t.ID)
			return nil
		},
	}
	create.Flags().StringVar(&role, "role", "view", "view or edit")
	create.Flags().DurationVar(&ttl, "expires-in", 0, "lifetime (e.g. 720h); default: until revoked")
	ls := &cobra.Command{
		Use: "ls", Short: "The namespace's tokens (never their secrets)", Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var ts []apiToken
			if err := c.client.get(cmd.Context(), c.tokensPath(), nil, &ts); err != nil {
				return err
			}
			if c.json() {
				return c.printJSON(ts)
			}
			rows := make([][]string, 0, len(ts))
			for _, t := range ts {
				exp := "-"
				if t.ExpiresAt != nil {
					exp = t.ExpiresAt.UTC().Format(time.RFC3339)
				}
				rows = append(rows, []string{t.ID, t.Name, t.Role, t.CreatedBy, t.CreatedAt.UTC().Format(time.RFC3339), exp})
			}
			return c.table([]string{"ID", "NAME", "ROLE", "CREATED BY", "CREATED", "EXPIRES"}, rows)
		},
	}
	revoke := &cobra.Command{
		Use: "revoke ID", Short: "Revoke a token", Args: exactArgs("ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := c.client.del(cmd.Context(), c.tokensPath()+"/"+seg(args[0])); err != nil {
				return err
			}
			c.say("token %s revoked", args[0])
			return nil
		},
	}
	cmd.AddCommand(create, ls, revoke)
	return cmd
}

func (c tenancyGroup) tokensPath() string {
	return "/api/namespaces/" + seg(c.settings.Namespace) + "/tokens"
}
