package api_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store/memory"
)

// BenchmarkWrite measures API writes (POST /api/job/register, 16 callers)
// without an audit log and with the real one (spool fsync per request,
// shared by concurrent requests; SQLite in a temp dir). Figures only.
func BenchmarkWrite(b *testing.B) {
	for _, audited := range []bool{false, true} {
		b.Run(fmt.Sprintf("audited=%t", audited), func(b *testing.B) {
			reg := registry.New(memory.New())
			o := api.Options{Registry: reg, Clock: clock.Real{}, Log: slog.New(slog.DiscardHandler), Auth: api.NewAuth(api.Credentials{}, clock.Real{}, nil)}
			if audited {
				o.Audit = newAuditLog(b)
			}
			h := api.New(o)
			if w := post(h, "/api/app", appBody("app")); w != http.StatusOK {
				b.Fatalf("publish: %d", w)
			}
			var n atomic.Int64
			b.SetParallelism(8) // 16 callers on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if code := post(h, "/api/job/register", jobBody(fmt.Sprintf("job%d", n.Add(1)), "app")); code != http.StatusOK {
						b.Errorf("register: %d", code)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
		})
	}
}

func post(h http.Handler, path, body string) int {
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(w, r)
	return w.Code
}
