package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// NewRequest builds a request to url. The body is sent raw when it is a
// string or []byte, as JSON otherwise (none when nil); a request with a
// body says Content-Type: application/json.
func NewRequest(method, url string, body any) (*http.Request, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return nil, fmt.Errorf("encode the body of %s %s: %w", method, url, err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// Send sends req with client and reads the whole answer. A read error is
// returned with the status and the header.
func Send(client *http.Client, req *http.Request) (int, []byte, http.Header, error) {
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		err = fmt.Errorf("%s %s: read the body: %w", req.Method, req.URL.Path, err)
	}
	return resp.StatusCode, out, resp.Header, err
}
