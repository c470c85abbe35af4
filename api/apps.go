package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/gin-gonic/gin"
)

// appHandlers serve /api/app: apps' configs, their disable flags (a job's too) and
// their packages, with the checks of an app's URL and pod template.
type appHandlers struct {
	*core
	live
	noFiles   bool             // Options.Apps.RejectFileAppURLs
	tenancy   *TenantIsolation // Options.Tenancy.TenantIsolation: warnAppURL
	pkgs      Packages
	templates PodTemplates
}

func (s *appHandlers) addApp(c *gin.Context) {
	create(s.core, c, app.Default(), func(cfg app.Config) error {
		if err := s.checkAddApp(c, cfg); err != nil {
			return err
		}
		s.warnAppURL(cfg, headerWarning(c))
		return nil
	}, s.regOf(c).Config().AddApp)
}

// checkAddApp is an app's registration's check.
func (s *appHandlers) checkAddApp(ctx context.Context, cfg app.Config) error {
	if err := checkNewApp(cfg); err != nil {
		return err
	}
	if err := s.checkAppURL(cfg); err != nil {
		return err
	}
	return s.checkAppTemplate(ctx, cfg)
}

// checkUpdateApp is an app's update's check.
func (s *appHandlers) checkUpdateApp(ctx context.Context, cfg app.Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := s.checkKeepsPackage(ctx, cfg); err != nil {
		return err
	}
	if err := s.checkAppURL(cfg); err != nil {
		return err
	}
	return s.checkAppTemplate(ctx, cfg)
}

func checkNewApp(cfg app.Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := validName("appName", cfg.AppName); err != nil {
		return err
	}
	if cfg.AppName == "list" { // GET /api/app/list would never reach it
		return fmt.Errorf("%w: appName %q is reserved by the REST API; choose another name", app.ErrInvalid, cfg.AppName)
	}
	if cfg.AppName == app.HTTPOnlyName {
		return fmt.Errorf("%w: appName %q is reserved for the executor of HTTP jobs that name no app; choose another name", app.ErrInvalid, cfg.AppName)
	}
	return nil
}

// create decodes a new app onto its defaults (absent fields keep
// them), checks it, adds it and answers it.
func create(s *core, c *gin.Context, cfg app.Config, check func(app.Config) error, add func(context.Context, app.Config) error) {
	body, err := readBody(c, s.maxBody)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	save(s, c, body, cfg, check, add)
}

// save decodes an app's body onto cfg (defaults or the current config),
// checks it, writes it and answers it. Numbers and booleans may come as
// strings, as on the job routes (unquotedBody).
func save(s *core, c *gin.Context, body []byte, cfg app.Config, check func(app.Config) error, write func(context.Context, app.Config) error) {
	dry, err := dryRunParam(c)
	if err == nil {
		body, err = unquotedBody(body, appNumbers, appBooleans)
	}
	if err == nil {
		err = decodeStrict(body, &cfg)
	}
	if err == nil {
		err = check(cfg)
	}
	if err == nil && !dry {
		err = write(c, cfg)
	}
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	c.JSON(http.StatusOK, cfg)
}

// updateApp merges the body onto the current config: absent fields keep
// their values (the manual's example sends only appName and appCacheEnable).
func (s *appHandlers) updateApp(c *gin.Context) {
	body, err := readBody(c, s.maxBody)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	var probe struct {
		AppName string `json:"appName"`
	}
	if err := decodeLoose(body, &probe); err != nil {
		writeError(c, s.log, err)
		return
	}
	if probe.AppName == "" {
		writeError(c, s.log, fmt.Errorf("%w: appName is required", app.ErrInvalid))
		return
	}
	if err := validName("appName", probe.AppName); err != nil { // before it becomes a store path
		writeError(c, s.log, err)
		return
	}
	if err := s.checkNotOwned(c, DefApp, probe.AppName); err != nil {
		writeError(c, s.log, err)
		return
	}
	cfg, err := s.regIn(c).Config().App(c, probe.AppName)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	save(s.core, c, body, cfg, func(cfg app.Config) error {
		if err := s.checkUpdateApp(c, cfg); err != nil {
			return err
		}
		s.warnAppURL(cfg, headerWarning(c))
		return nil
	}, s.regOf(c).Config().UpdateApp)
}

// checkKeepsPackage refuses to clear the appURL of an app whose jobs run
// its package.
func (s *appHandlers) checkKeepsPackage(ctx context.Context, cfg app.Config) error {
	if cfg.AppURL != "" {
		return nil
	}
	all, err := s.regIn(ctx).Config().Jobs(ctx)
	if err != nil {
		return err
	}
	var users []string
	for _, j := range all {
		if j.AppName == cfg.AppName && j.NeedsPackage() {
			users = append(users, j.JobName)
		}
	}
	if len(users) > 0 {
		return fmt.Errorf("%w: appURL cannot be cleared: jobs %v run the app's package", app.ErrInvalid, users)
	}
	return nil
}

func (s *appHandlers) getApp(c *gin.Context) {
	cfg, err := s.regIn(c).Config().App(c, c.Param("appName"))
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	c.JSON(http.StatusOK, cfg)
}

// appRow is an app config plus its disable flag, for lists.
type appRow struct {
	app.Config
	Disabled bool
}

// MarshalJSON keeps the config's own encoding and adds "disabled".
func (r appRow) MarshalJSON() ([]byte, error) { return withDisabled(r.Config, r.Disabled) }

func (s *appHandlers) listApps(c *gin.Context) {
	apps, err := s.regIn(c).Config().Apps(c)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	s.listWithDisabled(c, "app", len(apps), func(i int, off map[string]bool) any {
		return appRow{apps[i], off[apps[i].AppName]}
	})
}

func (s *appHandlers) deleteApp(c *gin.Context) {
	if err := s.removeApp(c, c.Param("appName")); err != nil {
		writeError(c, s.log, err)
	}
}

// removeApp deletes an app and its jobs, refusing (409) when workflows run
// any of those jobs unless ?force=true (inuse.go).
func (s *appHandlers) removeApp(c *gin.Context, name string) error {
	force, err := forceParam(c)
	if err != nil {
		return err
	}
	if _, err := s.regIn(c).Config().App(c, name); err != nil && !errors.Is(err, registry.ErrDamaged) {
		return err // (an app whose stored config does not decode is deleted too)
	}
	all, err := s.regIn(c).Config().Jobs(c)
	if err != nil {
		return err
	}
	if err := s.checkNotOwned(c, DefApp, name); err != nil {
		return err
	}
	var its []string
	for _, j := range all {
		if j.AppName == name {
			if err := s.checkNotOwned(c, DefJob, j.JobName); err != nil {
				return err // deleting the app would delete the job
			}
			its = append(its, j.JobName)
		}
	}
	broken, err := s.checkUnused(c, force, "app '"+name+"' (whose jobs are deleted with it)", its)
	if err != nil {
		return err
	}
	if _, err := s.regIn(c).Config().DeleteApp(c, name); err != nil {
		return err
	}
	deleted(c, "App '"+name+"' with its jobs", broken)
	return nil
}

// isDisabled answers GET …/disable with true or false, as the original did.
func (s *appHandlers) isDisabled(kind string) gin.HandlerFunc {
	return func(c *gin.Context) {
		name, err := s.checkExists(c, kind)
		if err != nil {
			writeError(c, s.log, err)
			return
		}
		d, err := s.regIn(c).Config().IsDisabled(c, kind, name)
		if err != nil {
			writeError(c, s.log, err)
			return
		}
		c.JSON(http.StatusOK, d)
	}
}

func (s *appHandlers) setDisabled(kind string, disabled bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		name, err := s.checkExists(c, kind)
		if err == nil {
			err = s.regIn(c).Config().SetDisabled(c, kind, name, disabled, s.clock.Now())
		}
		if err != nil {
			writeError(c, s.log, err)
			return
		}
		if !disabled && s.ops != nil {
			s.ops.Wake()
		}
		c.Status(http.StatusNoContent)
	}
}
