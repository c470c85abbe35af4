package api

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/gin-gonic/gin"
	"github.com/goccy/go-yaml"
)

// openAPIYAML is the API's OpenAPI 3.1 description, maintained by hand
// beside the handlers (YAML for its comments and anchors); clients get it
// as JSON. See doc.go for how to add a route.
//
//go:embed openapi.yaml
var openAPIYAML []byte

// OpenAPI returns the OpenAPI document as JSON (key order as written).
var OpenAPI = sync.OnceValues(func() ([]byte, error) {
	j, err := yaml.YAMLToJSON(openAPIYAML)
	if err != nil {
		return nil, fmt.Errorf("api: openapi.yaml: %w", err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, j); err != nil {
		return nil, fmt.Errorf("api: openapi.yaml as JSON: %w", err)
	}
	return buf.Bytes(), nil
})

// serveOpenAPI answers GET /api/openapi.json (no login: it holds no data).
func serveOpenAPI(c *gin.Context) {
	doc, err := OpenAPI()
	if err != nil {
		c.AbortWithStatusJSON(http.StatusInternalServerError, gin.H{"message": err.Error()})
		return
	}
	c.Header("Cache-Control", "no-cache")
	c.Data(http.StatusOK, "application/json; charset=utf-8", doc)
}
