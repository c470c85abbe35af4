package api

import (
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"
)

// consoleHandlers serve what a person at the console or a tool asks of the instance
// itself: login, logout, whoami, OIDC, /metrics and /debug/pprof.
type consoleHandlers struct {
	*core
	clientAddr func(*http.Request) string // Options.Forwarding.ClientAddr
}

func (s *consoleHandlers) login(c *gin.Context) {
	body, err := readBody(c, s.maxBody)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	var req loginRequest
	if err := decodeStrict(body, &req); err != nil {
		writeError(c, s.log, err)
		return
	}
	c.Set(ctxUser, req.Username)
	addr := s.clientAddr(c.Request)
	if s.auth.throttled(addr) {
		writeError(c, s.log, fmt.Errorf("%w: too many failed logins; try again in a minute", ErrTooMany))
		return
	}
	tok, p, exp, err := s.auth.Login(req.Username, req.Password)
	if err != nil {
		s.auth.failed(addr)
		writeError(c, s.log, err)
		return
	}
	c.Set(ctxRole, Role(p.Kind))
	resp := gin.H{"token": tok, "role": p.Kind, "expiresAt": exp.UTC()}
	if !p.Admin {
		resp["namespaces"] = p.Roles
	}
	c.JSON(http.StatusOK, resp)
}

func (s *consoleHandlers) logout(c *gin.Context) {
	if tok, ok := bearer(c.Request); ok {
		if cl, err := s.auth.session(c, tok); err == nil {
			c.Set(ctxUser, cl.User)
			c.Set(ctxRole, cl.Role)
		}
		if err := s.auth.Logout(c, tok); err != nil {
			writeError(c, s.log, err)
			return
		}
	}
	c.Status(http.StatusNoContent)
}

// whoami says who the caller is and what it may do: its role kind, and
// for all but the admin its role in each namespace.
func (s *consoleHandlers) whoami(c *gin.Context) {
	p := principal(c)
	resp := gin.H{"user": p.Name, "role": p.Kind, "open": s.auth.Open(), "admin": p.Admin}
	if !p.Admin {
		resp["namespaces"] = p.Roles
	}
	c.JSON(http.StatusOK, resp)
}
