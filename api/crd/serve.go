package crd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/ejcloud/elasticjob/registry"
	"k8s.io/client-go/kubernetes"
)

// WebhookServer serves the webhook on its own TLS listener and registers
// it with the API server.
type WebhookServer struct {
	URL     string        // kube_webhook_url: where the API server reaches the webhook
	Listen  string        // kube_webhook_address: host:port to listen on ("": from URL)
	CA      registry.Cell // registry.Term.WebhookCA
	Client  kubernetes.Interface
	Handler Webhook
	Log     *slog.Logger
	Now     func() time.Time
}

// Endpoint is the URL the API server is given (URL with WebhookPath when it
// has no path), the host its certificate names, and the address to listen
// on: Listen, or the URL's port on the URL's host when that is an IP and on
// every interface when it is a name (a Service's name is not the pod's).
func Endpoint(rawURL, listen string) (full, host, addr string, err error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" {
		return "", "", "", fmt.Errorf("kube_webhook_url %q: want https://host:port[/path]", rawURL)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = WebhookPath
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	host = u.Hostname()
	addr = listen
	if addr == "" {
		if net.ParseIP(host) != nil {
			addr = net.JoinHostPort(host, port)
		} else {
			addr = ":" + port
		}
	}
	return u.String(), host, addr, nil
}

// Run listens, registers the webhook (retrying while the API server cannot
// be reached) and serves until ctx ends.
func (w WebhookServer) Run(ctx context.Context) error {
	full, host, addr, err := Endpoint(w.URL, w.Listen)
	if err != nil {
		return err
	}
	ca, err := LoadCA(ctx, w.CA, w.Now())
	if err != nil {
		return err
	}
	cert, err := ca.Serving(host, w.Now())
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("webhook: listen: %w", err)
	}
	u, _ := url.Parse(full)
	mux := http.NewServeMux()
	mux.Handle(u.Path, w.Handler)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	w.Log.Info("webhook: serving", "url", full, "listen", ln.Addr().String())
	go w.register(ctx, full, ca.CertPEM)
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return nil
	case err := <-done:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("webhook: serve: %w", err)
	}
}

func (w WebhookServer) register(ctx context.Context, url string, caBundle []byte) {
	for {
		err := Register(ctx, w.Client, url, caBundle)
		if err == nil {
			w.Log.Info("webhook: registered", "config", WebhookConfigName, "url", url)
			return
		}
		w.Log.Warn("webhook: cannot register; retrying", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Second):
		}
	}
}
