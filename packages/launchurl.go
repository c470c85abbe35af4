package packages

import "strings"

// LaunchURL is the one rewrite of an app's URL at launch, whichever engine runs the
// task: resolve (Host.Resolve: a package hosted by any instance is fetched from this
// one; nil: none), then, when the tasks reach the schedulers at another address than the
// advertised one (Kubernetes pods: kube_scheduler_url), a URL under advertised+"/" is
// moved under reach+"/". Other URLs are left as they are.
func LaunchURL(resolve func(string) string, advertised, reach string) func(string) string {
	advertised, reach = strings.TrimRight(advertised, "/"), strings.TrimRight(reach, "/")
	return func(u string) string {
		if u == "" {
			return u
		}
		if resolve != nil {
			u = resolve(u)
		}
		if advertised != "" && reach != "" && advertised != reach {
			if rest, ok := strings.CutPrefix(u, advertised+"/"); ok {
				return reach + "/" + rest
			}
		}
		return u
	}
}
