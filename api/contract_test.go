package api_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	liberrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/helpers"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/ejcloud/elasticjob/api"
)

// contract is the served OpenAPI document loaded by libopenapi, with a
// libopenapi-validator validator over it. Every response the api tests
// receive goes through check (see env.request).
type contract struct {
	model *v3.Document
	v     validator.Validator
	errV  schema_validation.SchemaValidator
	err   *base.Schema

	mu sync.Mutex // the validator's caches are not documented as concurrency-safe
}

var loadContract = sync.OnceValues(func() (*contract, error) {
	raw, err := api.OpenAPI()
	if err != nil {
		return nil, err
	}
	doc, err := libopenapi.NewDocument(raw)
	if err != nil {
		return nil, fmt.Errorf("libopenapi: %w", err)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("libopenapi model: %w", err)
	}
	errSchema := m.Model.Components.Schemas.GetOrZero("Error")
	if errSchema == nil {
		return nil, fmt.Errorf("components/schemas/Error is missing")
	}
	v, errs := validator.NewValidator(doc, config.WithFormatAssertions())
	if len(errs) > 0 {
		return nil, fmt.Errorf("validator: %v", errs)
	}
	return &contract{model: &m.Model, v: v, errV: schema_validation.NewSchemaValidator(config.WithFormatAssertions()),
		err: errSchema.Schema()}, nil
})

func mustContract(t testing.TB) *contract {
	t.Helper()
	c, err := loadContract()
	if err != nil {
		t.Fatalf("the OpenAPI document does not load: %v", err)
	}
	return c
}

// check validates one response against the document: its status code,
// headers, content type and body for the request's operation. A request
// no route matches (gin's 404 and 405) is outside the document; its body
// must still be the documented Error.
func (c *contract) check(t testing.TB, req *http.Request, code int, hdr http.Header, body []byte) {
	t.Helper()
	if p := c.problems(req, code, hdr, body); p != "" {
		t.Errorf("%s %s answered %d %s: not as the OpenAPI document says:\n%s", req.Method, req.URL.RequestURI(), code,
			truncateBody(body), p)
	}
}

// problems lists how a response departs from the document ("" if not).
func (c *contract) problems(req *http.Request, code int, hdr http.Header, body []byte) string {
	resp := &http.Response{StatusCode: code, Header: hdr, Body: io.NopCloser(bytes.NewReader(body)), Request: req}
	c.mu.Lock()
	defer c.mu.Unlock()
	ok, errs := c.v.ValidateHttpResponse(req, resp)
	if !ok && unmatched(errs) && (code == http.StatusNotFound || code == http.StatusMethodNotAllowed) {
		ok, errs = c.errV.ValidateSchemaBytes(c.err, body)
	}
	if ok {
		return ""
	}
	return describe(errs)
}

func unmatched(errs []*liberrors.ValidationError) bool {
	for _, e := range errs {
		if e.ValidationType != helpers.PathValidation {
			return false
		}
	}
	return len(errs) > 0
}

func describe(errs []*liberrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "  - %s: %s", e.Message, e.Reason)
		for _, f := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "\n      %s at %s", f.Reason, f.FieldPath)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func truncateBody(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}
