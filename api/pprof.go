package api

import (
	"fmt"
	"net/http"
	"net/http/pprof"
	"runtime"

	"github.com/gin-gonic/gin"
)

// Profiling (Options.Operate.Pprof, the debug_pprof setting): Go's net/http/pprof
// handlers under /debug/pprof/, for admins only (Basic or a bearer token,
// as /api; a guest gets 403, a caller without credentials 401; with open
// access, which the scheduler allows only on loopback, everyone is admin).
// Off by default: the routes do not exist then.

// Sampling rates turned on with profiling: every blocking event of at
// least blockProfileRate nanoseconds (shorter ones in proportion), and one
// lock contention event in mutexProfileFraction.
const (
	blockProfileRate     = 10_000
	mutexProfileFraction = 10
)

// profiles are the names served at /debug/pprof/{profile}.
var profiles = map[string]http.HandlerFunc{
	"cmdline": pprof.Cmdline,
	"profile": pprof.Profile, // CPU, ?seconds=N (default 30)
	"symbol":  pprof.Symbol,
	"trace":   pprof.Trace, // execution trace, ?seconds=N (default 1)
}

func init() {
	for _, name := range []string{"allocs", "block", "goroutine", "heap", "mutex", "threadcreate"} {
		profiles[name] = pprof.Handler(name).ServeHTTP
	}
}

// EnableProfiling turns on the block and mutex profiles' sampling for the
// process (they record nothing otherwise). New calls it when
// Options.Operate.Pprof is set.
func EnableProfiling() {
	runtime.SetBlockProfileRate(blockProfileRate)
	runtime.SetMutexProfileFraction(mutexProfileFraction)
}

// adminCaller admits admins only (outside /api, so without the audit and
// write-forwarding middleware: profiles are read locally, per instance).
func (s *consoleHandlers) adminCaller(c *gin.Context) {
	p, err := s.auth.principalOf(c.Request)
	c.Set(ctxUser, p.Name)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	c.Set(ctxRole, Role(p.Kind))
	if !p.Admin {
		writeError(c, s.log, fmt.Errorf("%w: profiles are for admins only", ErrForbidden))
		return
	}
	c.Next()
}

func (s *consoleHandlers) serveProfile(c *gin.Context) {
	h, ok := profiles[c.Param("profile")]
	if !ok {
		writeError(c, s.log, fmt.Errorf("%w: no profile %q (see /debug/pprof/)", ErrNotFound, c.Param("profile")))
		return
	}
	h(c.Writer, c.Request)
}
