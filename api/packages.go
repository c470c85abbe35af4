package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/executor/extract"
	"github.com/ejcloud/elasticjob/packages"
	"github.com/gin-gonic/gin"
)

// Packages hosts uploaded app packages (implemented by packages.Host).
type Packages interface {
	// ServeHTTP serves GET/HEAD /packages/… to agents, without authentication.
	http.Handler
	// Receive streams a package into the store, within MaxBytes.
	Receive(ctx context.Context, r io.Reader) (*packages.Pending, error)
	// URL is a stored package's URL on this instance.
	URL(sha256, filename string) string
	MaxBytes() int64
}

// uploadIdle is how long an upload may send nothing before it is cut off
// (the server's whole-request ReadTimeout does not bound an upload).
const uploadIdle = time.Minute

// PackageAnswer is the answer of PUT /api/app/{appName}/package.
type PackageAnswer struct {
	AppName string `json:"appName"`
	SHA256  string `json:"sha256"`
	Size    int64  `json:"size"`
	AppURL  string `json:"appURL"`
}

// uploadPackage stores the body (raw, or the multipart field "package") as
// the app's package and points the app's appURL at it. A checksum sent in
// X-Content-SHA256, ?sha256= or the multipart field "sha256" must match, or
// nothing is stored. The API's body limit does not apply: package_max_bytes
// does, and the body is streamed to disk.
func (s *appHandlers) uploadPackage(c *gin.Context) {
	if err := s.storePackage(c); err != nil {
		writeError(c, s.log, err)
	}
}

func (s *appHandlers) storePackage(c *gin.Context) error {
	if s.pkgs == nil {
		return fmt.Errorf("%w: this scheduler hosts no packages", ErrUnavailable)
	}
	name := c.Param("appName")
	if _, err := s.regIn(c).Config().App(c, name); err != nil {
		return err // 404 before a byte of the body is read
	}
	want, err := clientSHA(c.GetHeader("X-Content-SHA256"), c.Query("sha256"), "")
	if err != nil {
		return err
	}
	if max := s.pkgs.MaxBytes(); c.Request.ContentLength > max {
		return fmt.Errorf("%w: the package is %d bytes, larger than the %d-byte limit (package_max_bytes)",
			packages.ErrTooLarge, c.Request.ContentLength, max)
	}
	c.Request.Body = newUploadBody(c)
	p, filename, fieldSHA, err := s.receivePackage(c)
	if err != nil {
		return err
	}
	defer p.Discard()
	if want, err = clientSHA(want, fieldSHA, "the multipart field sha256"); err != nil {
		return err
	}
	if p.Size() == 0 {
		return fmt.Errorf("%w: the package is empty", ErrBadRequest)
	}
	if _, err := p.Format(); err != nil {
		return fmt.Errorf("%w: %w; nothing was stored", ErrBadRequest, err)
	}
	if err := checkEntries(c, p); err != nil {
		return err
	}
	info, err := p.Commit(want)
	if err != nil {
		return err
	}
	cfg, err := s.regIn(c).Config().SetAppURL(c, name, s.pkgs.URL(info.SHA256, filename))
	if err != nil {
		return err
	}
	s.log.Info("package uploaded", "app", name, "sha256", info.SHA256, "size", info.Size)
	c.JSON(http.StatusOK, PackageAnswer{AppName: name, SHA256: info.SHA256, Size: info.Size, AppURL: cfg.AppURL})
	return nil
}

// clientSHA merges two client checksums (either may be empty); differing
// ones are an error.
func clientSHA(a, b, bWhere string) (string, error) {
	var out string
	for _, v := range []string{a, b} {
		if v == "" {
			continue
		}
		h, err := packages.NormalizeSHA(v)
		if err != nil {
			return "", fmt.Errorf("%w: sha256: %v", ErrBadRequest, err)
		}
		if out != "" && out != h {
			return "", fmt.Errorf("%w: two different sha256 were sent (%s in %s)", ErrBadRequest, h, bWhere)
		}
		out = h
	}
	return out, nil
}

// receivePackage reads a raw or multipart body into a pending package.
func (s *appHandlers) receivePackage(c *gin.Context) (*packages.Pending, string, string, error) {
	filename := c.Query("filename")
	mt, params, _ := mime.ParseMediaType(c.GetHeader("Content-Type"))
	if mt != "multipart/form-data" {
		p, err := s.pkgs.Receive(c, c.Request.Body)
		return p, filename, "", err
	}
	if params["boundary"] == "" {
		return nil, "", "", fmt.Errorf("%w: multipart/form-data without a boundary", ErrBadRequest)
	}
	return s.receiveMultipart(c, multipart.NewReader(c.Request.Body, params["boundary"]), filename)
}

// receiveMultipart takes the field "package" (the file) and the optional
// field "sha256", in either order.
func (s *appHandlers) receiveMultipart(ctx context.Context, mr *multipart.Reader, filename string) (*packages.Pending, string, string, error) {
	var (
		p   *packages.Pending
		sum string
	)
	fail := func(err error) (*packages.Pending, string, string, error) {
		if p != nil {
			p.Discard()
		}
		return nil, "", "", err
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fail(fmt.Errorf("%w: malformed multipart body: %v", ErrBadRequest, err))
		}
		switch part.FormName() {
		case "package":
			if p != nil {
				return fail(fmt.Errorf("%w: the field package was sent twice", ErrBadRequest))
			}
			if p, err = s.pkgs.Receive(ctx, part); err != nil {
				return fail(err)
			}
			if filename == "" {
				filename = part.FileName()
			}
		case "sha256":
			b, err := io.ReadAll(io.LimitReader(part, 200))
			if err != nil {
				return fail(fmt.Errorf("%w: reading the field sha256: %v", ErrBadRequest, err))
			}
			sum = strings.TrimSpace(string(b))
		default:
			return fail(fmt.Errorf("%w: unknown multipart field %q: send the file in the field package and, optionally, its hex sha256 in the field sha256",
				ErrBadRequest, part.FormName()))
		}
	}
	if p == nil {
		return fail(fmt.Errorf("%w: the multipart body has no field package (the file)", ErrBadRequest))
	}
	return p, filename, sum, nil
}

// uploadBody extends the connection's read deadline while data arrives and
// reports a failed read as the client's fault.
type uploadBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	next time.Time
}

func newUploadBody(c *gin.Context) *uploadBody {
	b := &uploadBody{ReadCloser: c.Request.Body, rc: http.NewResponseController(c.Writer)}
	b.extend()
	return b
}

func (b *uploadBody) extend() {
	now := time.Now() // a network deadline: wall time by nature
	if now.After(b.next) {
		_ = b.rc.SetReadDeadline(now.Add(uploadIdle)) // unsupported by test recorders: fine
		b.next = now.Add(time.Second)
	}
}

func (b *uploadBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.extend()
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return n, fmt.Errorf("%w: reading the upload: %v", ErrBadRequest, err)
	}
	return n, err
}

// checkEntries refuses an archive the executor would refuse to extract
// (an entry that climbs out with .., an absolute path, a link out, a
// device), naming the entry: accepted, every run of it failed.
func checkEntries(ctx context.Context, p *packages.Pending) error {
	f, err := p.Open()
	if err != nil {
		return err
	}
	defer f.Close()
	if err := extract.CheckEntries(ctx, f, p.Size()); err != nil {
		if errors.Is(err, extract.ErrUnsafe) {
			return fmt.Errorf("%w: %w; nothing was stored", ErrBadRequest, err)
		}
		return err
	}
	return nil
}
