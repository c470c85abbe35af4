// Package api serves the REST API (SPEC.md §4) with gin: each handler
// decodes, calls the registry or the scheduler, and encodes. One function,
// writeError, maps domain errors to HTTP codes and JSON {"message": …}.
package api
