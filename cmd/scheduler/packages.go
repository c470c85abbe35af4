package main

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"

	"github.com/ejcloud/elasticjob/config"
	"github.com/ejcloud/elasticjob/packages"
	"github.com/ejcloud/elasticjob/registry"
)

// openPackages hosts uploaded app packages in data_dir/packages. Their URLs
// name this instance's advertise_url (or http://hostname:port, with the port
// the API really listens on). peers lists the other instances' base URLs in
// cluster mode; nil for a single instance.
func openPackages(ctx context.Context, cfg config.Config, log *slog.Logger, reg *registry.Registry, ln net.Listener,
	peers func() []string) (*packages.Host, error) {
	key, err := packages.LoadKey(ctx, reg.Term().PackageKey())
	if err != nil {
		return nil, err
	}
	base := cfg.AdvertiseURL
	if base == "" {
		port := cfg.HTTPPort
		if a, ok := ln.Addr().(*net.TCPAddr); ok {
			port = a.Port
		}
		base = "http://" + net.JoinHostPort(cfg.Hostname, strconv.Itoa(port))
	}
	return packages.New(packages.Options{
		Dir: filepath.Join(cfg.DataDir, "packages"), MaxBytes: cfg.PackageMaxBytes, Key: key, Base: base,
		Apps: packages.RegistryApps(reg), Peers: peers, Grace: cfg.PackageGCGrace,
		Log: log.With("subsystem", "packages"),
	})
}
