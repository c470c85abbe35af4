package embedded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// fetchTimeout bounds one URI download.
const fetchTimeout = 10 * time.Minute

// fetchURI copies a file:// URI, an absolute path or an http(s) URI into the
// sandbox, named by output_file or the URI's base name, and sets the
// executable bit when asked. Archives are not extracted.
func fetchURI(u mesos.CommandInfo_URI, dir string) error {
	parsed, err := url.Parse(u.Value)
	if err != nil {
		return err
	}
	name := u.GetOutputFile()
	if name == "" {
		name = path.Base(parsed.Path)
	}
	if name == "" || name == "." || name == "/" || filepath.IsAbs(name) || !filepath.IsLocal(name) {
		return fmt.Errorf("cannot derive a sandbox file name from %q", u.Value)
	}
	dst := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if u.GetExecutable() {
		mode = 0o755
	}
	switch parsed.Scheme {
	case "", "file":
		err = copyFile(parsed.Path, dst, mode)
	case "http", "https":
		err = download(parsed.String(), dst, mode)
	default:
		err = fmt.Errorf("unsupported URI scheme %q", parsed.Scheme)
	}
	if err != nil {
		return err
	}
	return os.Chmod(dst, mode)
}

func copyFile(src, dst string, mode os.FileMode) error {
	if !filepath.IsAbs(src) {
		return errors.New("file URIs must be absolute")
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return writeFile(dst, in, mode)
}

func download(rawURL, dst string, mode os.FileMode) error {
	ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", rawURL, resp.Status)
	}
	return writeFile(dst, resp.Body, mode)
}

func writeFile(dst string, r io.Reader, mode os.FileMode) error {
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
