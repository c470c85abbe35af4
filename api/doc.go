// Package api serves the REST API (SPEC.md §4) with gin: each handler
// decodes, calls the registry or the scheduler, and encodes. One function,
// writeError, maps domain errors to HTTP codes and JSON {"message": …}.
//
// # Layout
//
// Server is the route table (routes.go, every route in one place) and the
// middleware each request passes (auth, audit, forwarding to the leader).
// The handlers live in small groups by concern (apps, schedules, jobs,
// runs, guide, workflows, backfills, tenancy, operate, console,
// definitions), each a type holding what it uses; core.go lists them with
// their files, and Options lists its fields by the group that uses them.
//
// # OpenAPI
//
// openapi.yaml is the API's OpenAPI 3.1 description, maintained by hand
// beside the handlers (YAML for comments and anchors), embedded, and
// served as JSON at GET /api/openapi.json without a login (it holds no
// data); the console's API page renders it. DECISION: a hand-written
// document rather than one generated from Go: the routes' behaviour
// (bodies that may be a name or an object, two content types, the error
// codes each can answer) is written where a reviewer reads it, and the
// tests keep it honest. To add a route:
//
//  1. register it in its *Routes function in routes.go, with its handler
//     in its group's file;
//  2. describe it under paths: in openapi.yaml, reusing
//     components/parameters, components/schemas and, for errors,
//     components/responses, listing every status it can answer ("500"
//     always; "401" unless it is open; "403" for writes and admin-only
//     reads; "503" for writes, which go to the elected leader; "400" with
//     a name in the path; "413" when it reads a body);
//  3. run go test ./api/. TestOpenAPIDescribesEveryRoute walks
//     engine.Routes() and names routes the document misses and documented
//     operations no route serves; TestOpenAPIConventions checks that
//     each operation lists the codes above of its kind; every request the
//     api tests send goes through env.request, which validates the
//     response (status, headers, content type, body) against the document
//     with libopenapi-validator (contract_test.go); a write route also
//     needs a case in writeCases (audit_test.go), which checks its audit
//     row;
//  4. regenerate the route list of docs/api.md (go test ./api -run
//     TestAPIDocListsEveryRoute -update), which TestAPIDocListsEveryRoute
//     otherwise says differs, and describe the route there if it needs
//     more than its summary.
//
// # Audit log
//
// auditMiddleware runs before authMiddleware on /api, so every write
// (any method but GET, HEAD, OPTIONS) on a matched route is recorded after
// the chain answers, refused ones (400, 401, 403, 409, 5xx, a panic as
// 500) included: who (the user and role; "anonymous" with open access or
// no credentials; for a login the user name tried), the method, route
// pattern, target (a :xxxName path parameter, else the body's name), a
// summary (auditsummary.go: the fields a JSON body set, values only for
// sizes, counts, names, enums and URLs without credentials; a refusal's
// message with its quoted values elided), the status, the time (the
// injected clock) and the address (Options.Forwarding.ClientAddr, default the TCP
// peer; a cluster leader replaces it to trust a standby's forwarded
// address). Options.Audit.Record returns once the row is in the trace
// writer's spool on disk (bounded by auditWait), never waiting for the
// database; an error is logged and the request answered anyway. A standby
// that forwards a write calls SkipAudit, so the leader alone records it.
// GET /api/audit searches the log (admins only) with the history searches'
// paging, sorting, time range and filters.
package api
