package soak

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// A page of history that fails (a slow database under load) is asked for
// again; the run is not lost for one slow page.
func TestFetchHistoryAsksAgainForAFailedPage(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= historyTries-1 {
			http.Error(w, "slow", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{"total":1,"rows":[{"taskId":"t1","success":true,"completeTime":"2026-11-27T12:00:00Z"}]}`))
	}))
	defer srv.Close()
	hist, err := fetchHistory(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if got := hist["t1"]; len(got) != 1 || !got[0].Success || got[0].Open {
		t.Fatalf("history %v", hist)
	}
	calls.Store(-10) // from here every page fails
	if _, err := fetchHistory(context.Background(), srv.URL); err == nil {
		t.Fatal("a page failing every time was taken")
	}
}
