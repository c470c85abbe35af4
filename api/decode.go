package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"

	"github.com/ejcloud/elasticjob/app"
	"github.com/gin-gonic/gin"
)

// readBody reads the whole body within the size limit.
func readBody(c *gin.Context, limit int64) ([]byte, error) {
	r := http.MaxBytesReader(c.Writer, c.Request.Body, limit)
	b, err := io.ReadAll(r)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, fmt.Errorf("%w: the body exceeds %d bytes", ErrTooLarge, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: reading the body: %v", ErrBadRequest, err)
	}
	if err := duplicateKey(b); err != nil {
		return nil, err
	}
	return b, nil
}

// duplicateKey refuses a JSON body that names a key twice in one object,
// at any depth: encoding/json keeps the last, so {"cron":"0 0 * * * ?",
// "cron":"* * * * * ?"} registered the second unseen. Every body goes
// through readBody, so every JSON route refuses it alike. A body that is
// not a JSON object or array (a name, an iCalendar, a package) is not
// looked at, nor one that is malformed: the decoder says what is wrong.
func duplicateKey(body []byte) error {
	t := bytes.TrimSpace(body)
	if len(t) == 0 || (t[0] != '{' && t[0] != '[') {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.UseNumber()
	type level struct {
		keys   map[string]bool // nil: an array
		path   string
		expect bool // an object's next string token is a key
	}
	var stack []*level
	name := func() string {
		if len(stack) == 0 {
			return ""
		}
		return stack[len(stack)-1].path
	}
	var last string // the last key read, the path of a value that follows
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return nil
		}
		top := (*level)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				p := name()
				if top != nil && top.keys != nil {
					p = last
				} else if top != nil {
					p += "[]"
				}
				l := &level{path: p}
				if v == '{' {
					l.keys, l.expect = map[string]bool{}, true
				}
				stack = append(stack, l)
				continue
			case '}', ']':
				stack = stack[:len(stack)-1]
			}
		case string:
			if top != nil && top.keys != nil && top.expect {
				if top.keys[v] {
					where := "the body"
					if top.path != "" {
						where = "object " + top.path
					}
					return fmt.Errorf("%w: malformed JSON: key %q appears twice in %s; send each key once", ErrBadRequest, v, where)
				}
				top.keys[v] = true
				top.expect = false
				last = v
				if top.path != "" {
					last = top.path + "." + v
				}
				continue
			}
		}
		if len(stack) > 0 && stack[len(stack)-1].keys != nil {
			stack[len(stack)-1].expect = true // a value ended: a key comes next
		}
	}
}

// decodeStrict decodes one JSON object onto dst (whose fields may hold
// defaults or the current config: absent fields keep them). Unknown fields
// are rejected, so a misspelt field is an error rather than silently lost.
func decodeStrict(body []byte, dst any) error { return decode(body, dst, true) }

// decodeLoose decodes what it can, ignoring unknown fields (used to read
// the name out of a body before the strict decode), with decodeStrict's
// messages for empty and malformed bodies.
func decodeLoose(body []byte, dst any) error { return decode(body, dst, false) }

func decode(body []byte, dst any, strict bool) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return fmt.Errorf("%w: the body is empty; send a JSON object", ErrBadRequest)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("%w: malformed JSON: %s", ErrBadRequest, jsonMessage(err))
	}
	if rest := bytes.TrimSpace(body[dec.InputOffset():]); len(rest) > 0 {
		return fmt.Errorf("%w: malformed JSON: unexpected %q after the value at byte %d", ErrBadRequest, truncate(rest, 20), dec.InputOffset())
	}
	return nil
}

func jsonMessage(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return fmt.Sprintf("the body must be a JSON object, got %s", te.Value)
		}
		return fmt.Sprintf("field %q must be %s, got %s", te.Field, kindWord(te.Type), te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v at byte %d", se, se.Offset)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// kindWord names a Go type as a JSON client knows it: "an integer", not
// "a int"; "a number", not "a float64".
func kindWord(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return kindWord(t.Elem())
	}
	return "a " + t.String()
}

// nameBody reads a body that is just a name: plain text (my_job), a JSON
// string ("my_job") or, when field is set, a JSON object holding it.
func nameBody(body []byte, field string) (string, error) {
	name, err := rawName(body, field)
	if err == nil {
		err = validName(field, name)
	}
	return name, err
}

func rawName(body []byte, field string) (string, error) {
	s := strings.TrimSpace(string(body))
	if s == "" {
		return "", fmt.Errorf("%w: the body must hold the %s", ErrBadRequest, field)
	}
	switch s[0] {
	case '"':
		var v string
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return "", fmt.Errorf("%w: malformed JSON string: %s", ErrBadRequest, jsonMessage(err))
		}
		return strings.TrimSpace(v), nil
	case '{':
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			return "", fmt.Errorf("%w: malformed JSON: %s", ErrBadRequest, jsonMessage(err))
		}
		v, _ := m[field].(string)
		if v == "" {
			return "", fmt.Errorf("%w: the JSON body must hold %q", ErrBadRequest, field)
		}
		return v, nil
	}
	// The manual's markdown shows my\_job; accept the escaped form.
	return strings.ReplaceAll(s, `\_`, "_"), nil
}

// validName checks a name taken from a body or a path before it reaches
// the registry (where "..", "/" or NUL would make a bad store path).
func validName(field, name string) error {
	if name == "." || name == ".." { // app.ValidateName lets these through
		return fmt.Errorf("%w: %s %q is not a valid name", ErrBadRequest, field, name)
	}
	if err := app.ValidateName(field, name); err != nil {
		return fmt.Errorf("%w: %s", ErrBadRequest, strings.TrimPrefix(err.Error(), app.ErrInvalid.Error()+": "))
	}
	return nil
}

// checkNameParams rejects malformed :appName, :jobName, :workflowName and
// :runId path parameters.
func (s *Server) checkNameParams(c *gin.Context) {
	for _, p := range c.Params {
		if p.Key == "appName" || p.Key == "jobName" || p.Key == "workflowName" || p.Key == "runId" {
			if err := validName(p.Key, p.Value); err != nil {
				writeError(c, s.log, err)
				return
			}
		}
	}
	c.Next()
}

// checkQuery refuses a query string that does not parse. Go drops the
// pair it cannot parse (a ";" is no separator since Go 1.17) and keeps the
// rest, so ?sort=;DROP TABLE searched unsorted, silently, where an unknown
// filter is a 400.
func (s *Server) checkQuery(c *gin.Context) {
	if _, err := url.ParseQuery(c.Request.URL.RawQuery); err != nil {
		writeError(c, s.log, fmt.Errorf("%w: malformed query string: %v; encode a literal ';' as %%3B and '&' as %%26", ErrBadRequest, err))
		return
	}
	c.Next()
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
