package faults

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/app"
	"github.com/hashgate/hashgate/internal/handlers"
	"github.com/hashgate/hashgate/internal/testredis"
)

// The operator listener's /readyz on a Sentinel deployment reports topology sentinel, the
// primary the Sentinels name and the durability in force.
func TestReadyzReportsSentinelPrimary(t *testing.T) {
	t.Parallel()
	set := testredis.StartSentinel(t, testredis.SentinelOptions{})
	g := startGateway(t, set.URL(), 2*time.Second)
	// The operator listener's handler of a gateway over the same store.
	a, h, err := app.FreshKeys(g.cfg)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := app.New(g.cfg, g.store, app.Options{Auth: a, Hasher: h})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	gw.Admin.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("readyz: %d %s", rec.Code, rec.Body)
	}
	var ready handlers.ReadinessDetail
	if err := json.Unmarshal(rec.Body.Bytes(), &ready); err != nil {
		t.Fatal(err)
	}
	if ready.Redis.Topology != "sentinel" {
		t.Errorf("topology %q, want sentinel", ready.Redis.Topology)
	}
	if ready.Redis.Primary != set.Primary.Addr() {
		t.Errorf("primary %q, want %s", ready.Redis.Primary, set.Primary.Addr())
	}
	if ready.Redis.DurableReplicas != "auto" {
		t.Errorf("durableReplicas %q, want auto", ready.Redis.DurableReplicas)
	}
}
