package round

import (
	"fmt"
	"strings"

	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/queue"
)

// The namespaces' rules an entry passes before it is matched: engine
// closed, quota, limit, and lending for a borrower (lending.go).

// gate applies the namespace's rules to c before it is matched: an entry
// larger than its namespace's ceiling never runs; one that would take its
// namespace over its limit (or quota) waits, and so does everything of
// the namespace after it this round; one that borrows must leave what
// other namespaces' fires need of their guarantees (lending.go).
func (s *spaces) gate(c *cand) (queue.Wait, bool) {
	ns := c.ns
	cost, least := s.cost(c), c.leastCost()
	ceil, capped, quota := ns.cap.ceiling()
	if ns.cap.Closed != "" {
		return queue.Wait{Reason: queue.WaitNSLimit, NamespaceRule: &queue.NamespaceRule{Namespace: ns.name, Rule: queue.RuleEngineClosed},
			Message: fmt.Sprintf("namespace %s cannot launch on this cluster now: %s", ns.name, ns.cap.Closed)}, false
	}
	if capped && quota && !least.Fits(ceil) && (ns.cap.Limit == nil || least.Fits(*ns.cap.Limit)) {
		// Larger than what the quota leaves now, not necessarily than the quota: it waits
		// for the quota to be raised or the Kubernetes namespace's other pods to end.
		ns.atLimit = c
		w := queue.Wait{Reason: queue.WaitNSLimit, NamespaceRule: &queue.NamespaceRule{Namespace: ns.name, Rule: queue.RuleQuota},
			Message: fmt.Sprintf("namespace %s is at %s: its running tasks and executors hold %s of the %s it leaves them, and this needs %s; it runs when the quota is raised "+
				"or pods of the Kubernetes namespace end", ns.name, ceilingWords(ns.cap, true), fmtRes(ns.used)+retiringWords(ns.retiring), fmtRes(*ns.cap.Quota), needWords(c, least))}
		return s.nsHolders(c, w), false
	}
	if capped && !least.Fits(ceil) {
		return queue.Wait{Reason: queue.WaitTooLarge, NamespaceRule: &queue.NamespaceRule{Namespace: ns.name, Rule: ruleOf(quota, queue.RuleLimit, queue.RuleQuota)},
			Message: fmt.Sprintf("can never fit its namespace: it needs %s, and namespace %s may hold at most %s (%s)",
				needWords(c, least), ns.name, fmtRes(ceil), ceilingWords(ns.cap, quota))}, false
	}
	if h := ns.atLimit; h != nil {
		return queue.Wait{Reason: queue.WaitNSLimit, NamespaceRule: &queue.NamespaceRule{Namespace: ns.name, Rule: ruleOf(quota, queue.RuleLimit, queue.RuleQuota)},
			Message: fmt.Sprintf("behind the older %s, which waits for namespace %s to drop below its limit", describe(h), ns.name)}, false
	}
	if capped && !ns.used.Add(cost).Fits(ceil) {
		ns.atLimit = c
		w := queue.Wait{Reason: queue.WaitNSLimit, NamespaceRule: &queue.NamespaceRule{Namespace: ns.name, Rule: ruleOf(quota, queue.RuleLimit, queue.RuleQuota)},
			Message: fmt.Sprintf("namespace %s is at its limit: its running tasks and executors hold %s%s of the %s it may hold (%s), and this needs %s more; "+
				"it runs as the namespace's running work ends and its idle executors exit", ns.name, fmtRes(ns.used), retiringWords(ns.retiring), fmtRes(ceil),
				ceilingWords(ns.cap, quota), needWords(c, cost))}
		return s.nsHolders(c, w), false
	}
	if c.class == classBorrowing {
		return s.lend.lend(c)
	}
	return queue.Wait{}, true
}

// retiringWords words the part r of what a namespace holds that its retiring tasks hold
// (View.Retiring): "" when none, so a wait at a limit tells that an overlapping move
// counts, and that this part ends as soon as the replacements run.
func retiringWords(r offers.Resources) string {
	if r.IsZero() {
		return ""
	}
	return fmt.Sprintf(" (%s of it by the old tasks of DAEMON shards moving with an overlap, until their replacements run)", fmtRes(r))
}

func ruleOf(quota bool, limit, q string) string {
	if quota {
		return q
	}
	return limit
}

func ceilingWords(c Capacity, quota bool) string {
	if quota {
		name := c.QuotaName
		if name == "" {
			name = "of its Kubernetes namespace"
		}
		return "the Kubernetes ResourceQuota " + name
	}
	return "its limit"
}

// needWords words what c needs of its namespace (r: its shards and k of
// its app's executors): "2 CPUs and 128 MB", or "2.1 CPUs and 192 MB (2
// CPUs and 128 MB for its shards, 0.1 CPUs and 64 MB for its app's
// executor)".
func needWords(c *cand, r offers.Resources) string {
	s := c.shards()
	if r == s {
		return fmtRes(r)
	}
	e := r.Sub(s)
	execs := "its app's executor"
	if e != c.sh.exec {
		execs = "its app's executors"
	}
	return fmt.Sprintf("%s (%s for its %s, %s for %s)", fmtRes(r), fmtRes(s), plural(c.sh.n, "shard"), fmtRes(e), execs)
}

// nsHolders names the namespace's own running work as what holds c back.
func (s *spaces) nsHolders(c *cand, w queue.Wait) queue.Wait {
	need := s.cost(c)
	w.Needs = &queue.Res{}
	*w.Needs = resOf(need)
	w.Holders = s.occ.holdersWhere(func(job string) bool { return namespace.Of(job) == c.ns.name })
	if len(w.Holders) > 0 {
		parts := make([]string, len(w.Holders))
		for i, h := range w.Holders {
			parts[i] = holderWords(h)
		}
		w.Message += "; held by " + strings.Join(parts, ", ")
	}
	return w
}
