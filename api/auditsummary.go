package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/gin-gonic/gin"
)

// What an audit row says about a write, without secrets: the summary
// names the fields a JSON body set, with values only for the fields in
// auditValues (sizes, counts, enums, names, a URL with its user info,
// query and fragment cut); every other value (passwords, tokens, job
// parameters, props, scripts, descriptions) is left out. Error messages
// keep their words but lose every quoted value ("…") that is not a field
// name of the body or the target's name, since validation errors quote
// what they were sent.

// auditValues are the body fields whose values an audit summary shows.
var auditValues = map[string]bool{
	"appName": true, "jobName": true, "workflowName": true, "name": true, "maxConcurrentRuns": true,
	"cpuCount": true, "memoryMB": true, "appCacheEnable": true, "eventTraceSamplingCount": true,
	"jobExecutionType": true, "cron": true, "timeZone": true, "shardingTotalCount": true,
	"failover": true, "misfire": true, "jobType": true, "timeoutSeconds": true, "maxRetries": true,
	"retryBackoffSeconds": true, "jobErrorHandlerType": true, "idempotencyKey": true,
	"crons": true, "jitter": true, "calendar": true,
	"appURL": true, // shown through safeURL
}

// nameFields are the body fields that name a target, by kind.
var nameFields = []struct{ field, kind string }{{"jobName", "job"}, {"appName", "app"}, {"workflowName", "workflow"}}

// auditTarget names what a write touched: a :xxxName path parameter, else
// the name field of a JSON body for the route's kind (then any), else a
// body that is just a name (trigger, deregister).
func auditTarget(c *gin.Context, route string, body []byte) (kind, target string) {
	if strings.HasPrefix(route, "/api/namespaces/:name/tokens") {
		return "token", c.Param("id") // a new token's id is in the answer, never its secret
	}
	if strings.HasPrefix(route, "/api/namespaces/:name/secrets") {
		return "secret", c.Param("secret") // its name; the value is never in a summary
	}
	if strings.HasPrefix(route, "/api/namespaces/:name/calendars") {
		return "calendar", c.Param("calendar")
	}
	if strings.HasPrefix(route, "/api/namespaces/:name") {
		return "namespace", c.Param("name")
	}
	if strings.HasPrefix(route, "/api/job/backfills/:id") {
		return "backfill", c.Param("id")
	}
	if strings.HasPrefix(route, "/api/operate/clusters/:cluster") { // a drain or an undrain
		return "cluster", c.Param("cluster")
	}
	if route == damagedRoute {
		return "registry", c.Query("path") // the damaged entry's store path
	}
	if strings.HasPrefix(route, "/api/operate/store/members") { // a member of the replicated store
		if m := c.Param("member"); m != "" {
			return "member", m
		}
		var add struct{ Name string }
		_ = json.Unmarshal(body, &add)
		return "member", add.Name
	}
	for _, p := range c.Params {
		if k, ok := strings.CutSuffix(p.Key, "Name"); ok && k != "" {
			return k, p.Value
		}
	}
	rk := routeKind(route)
	if rk == "" {
		return "", ""
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) == nil {
		// a workflow's body names it "name" (its JSON shape in the issue)
		order := append([]struct{ field, kind string }{{rk + "Name", rk}, {"name", rk}}, nameFields...)
		for _, f := range order {
			var v string
			if json.Unmarshal(obj[f.field], &v) == nil && validName(f.field, v) == nil {
				return f.kind, v
			}
		}
		return rk, ""
	}
	if name, err := rawName(body, rk+"Name"); err == nil && validName(rk+"Name", name) == nil {
		return rk, name
	}
	return rk, ""
}

// changeSummary describes a write: the fields its JSON body set, and for
// a refused write the reason.
func changeSummary(body []byte, truncated bool, status int, errMsg, target string) string {
	var parts []string
	keys := map[string]bool{}
	var obj map[string]json.RawMessage
	switch trimmed := bytes.TrimSpace(body); {
	case truncated:
		parts = append(parts, fmt.Sprintf("body over %d bytes", len(body)))
	case len(trimmed) > 0 && trimmed[0] == '{' && json.Unmarshal(trimmed, &obj) == nil:
		parts = append(parts, describeFields(obj))
		for k := range obj {
			keys[k] = true
		}
	case len(trimmed) > 0 && target == "":
		parts = append(parts, fmt.Sprintf("body of %d bytes", len(body)))
	}
	if status >= 400 && errMsg != "" {
		parts = append(parts, "refused: "+redactMessage(errMsg, keys, target))
	}
	return strings.Join(nonEmpty(parts), "; ")
}

func describeFields(obj map[string]json.RawMessage) string {
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]string, 0, len(names))
	for _, k := range names {
		out = append(out, describeField(k, obj[k]))
	}
	return "fields: " + strings.Join(out, ", ")
}

func describeField(k string, raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return k
	}
	switch x := v.(type) {
	case map[string]any:
		return fmt.Sprintf("%s(%d keys)", k, len(x))
	case []any:
		return fmt.Sprintf("%s(%d items)", k, len(x))
	case nil:
		return k + "=null"
	}
	if !auditValues[k] {
		return k
	}
	s, isString := v.(string)
	if !isString {
		return k + "=" + string(bytes.TrimSpace(raw))
	}
	if k == "appURL" {
		s = safeURL(s)
	}
	return k + "=" + clipRunes(s, 120)
}

// safeURL keeps a URL's scheme, host and path: no user info, query or
// fragment (where credentials and tokens travel).
func safeURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return "(not a URL)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}

var (
	quoted   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	userInfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/\s"@]*@`)
)

// redactMessage drops quoted values from an error message (keeping field
// names and the target's name) and user info from any URL left.
func redactMessage(msg string, keys map[string]bool, target string) string {
	msg = quoted.ReplaceAllStringFunc(msg, func(q string) string {
		inner := q[1 : len(q)-1]
		if keys[inner] || (inner == target && target != "") || isFieldName(inner) {
			return q
		}
		return `"…"`
	})
	return clipRunes(userInfo.ReplaceAllString(msg, "${1}***@"), 300)
}

// isFieldName reports names of the request types' fields (quoted in
// "unknown field" and type errors).
func isFieldName(s string) bool {
	return auditValues[s] || s == "appURL" || s == "props" || s == "jobParameter" || s == "username" || s == "password" ||
		s == "bootstrapScript" || s == "description" || s == "shardingItemParameters"
}

func clipRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func nonEmpty(ss []string) []string {
	out := ss[:0]
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
