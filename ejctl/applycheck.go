package ejctl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// An apply is all or nothing. Before it changes anything, every create
// and update of the plan is sent with ?dryRun=true, so the scheduler
// checks it as it would write it (fields, cron, calendar, secrets of the
// namespace, fit, pod template): a job naming a secret the namespace
// lacks fails the dry run too, and the apply stops with nothing changed.
// Should a change still fail while applying (the scheduler changed
// meanwhile), the changes already made are undone: a created app or job
// deleted, an updated one put back as it was.

// checkChanges sends the plan's creates and updates as dry runs and lists
// every refusal (none: the plan may be applied).
func (c objectGroup) checkChanges(ctx context.Context, p Plan, parallel int) []string {
	check := Plan{Changes: append([]Change(nil), p.Changes...)}
	var idx []int
	for i, ch := range check.Changes {
		if ch.Action == ActCreate || ch.Action == ActUpdate {
			idx = append(idx, i)
		}
	}
	c.runEach(ctx, &check, idx, parallel, func(ctx context.Context, ch Change) error { return c.send(ctx, ch, true) })
	var problems []string
	for _, ch := range check.Changes {
		if ch.Error != "" {
			problems = append(problems, fmt.Sprintf("%s %s: %s", ch.Kind, ch.Name, ch.Error))
		}
	}
	return problems
}

// send carries out a create or update (dry: checked only).
func (c objectGroup) send(ctx context.Context, ch Change, dry bool) error {
	method, path := http.MethodPost, "/api/app"
	if ch.Kind == "job" {
		path = "/api/job/register"
	}
	body := ch.body
	if ch.Action == ActUpdate {
		method, path = http.MethodPut, "/api/app"
		if ch.Kind == "job" {
			path = "/api/job/update"
		}
		b, err := updateBody(ch.cur, ch.body)
		if err != nil {
			return err
		}
		body = b
	}
	var q url.Values
	if dry {
		q = url.Values{"dryRun": {"true"}}
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return c.client.call(ctx, request{method: method, path: path, query: q, body: bytes.NewReader(raw), contentType: "application/json"}, nil)
}

// undo reverts the creates and updates of p that were carried out (apps
// last, as they were made first) and says what could not be reverted.
func (c objectGroup) undo(ctx context.Context, p Plan) []string {
	var left []string
	for i := len(p.Changes) - 1; i >= 0; i-- {
		ch := p.Changes[i]
		if ch.Error != "" || (ch.Action != ActCreate && ch.Action != ActUpdate) {
			continue
		}
		var err error
		if ch.Action == ActCreate {
			k := appKind
			if ch.Kind == "job" {
				k = jobKind
			}
			if err = c.client.del(ctx, k.delPath(ch.Name)); IsNotFound(err) {
				err = nil
			}
		} else {
			err = c.send(ctx, Change{Kind: ch.Kind, Name: ch.Name, Action: ActUpdate, body: ch.cur, cur: ch.body}, false)
		}
		if err != nil {
			left = append(left, fmt.Sprintf("%s %s stays %sd (%v)", ch.Kind, ch.Name, ch.Action, err))
		}
	}
	return left
}

// failures lists the changes of p that failed.
func failures(p Plan) string {
	var out []string
	for _, ch := range p.Changes {
		if ch.Error != "" {
			out = append(out, fmt.Sprintf("%s %s %s: %s", ch.Action, ch.Kind, ch.Name, ch.Error))
		}
	}
	return strings.Join(out, "; ")
}
