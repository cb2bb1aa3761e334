package faults

import (
	"net/http"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/handlers"
	"github.com/hashgate/hashgate/internal/testredis"
)

// /readyz on a Sentinel deployment reports topology sentinel, the primary the Sentinels name
// and the durability in force.
func TestReadyzReportsSentinelPrimary(t *testing.T) {
	t.Parallel()
	set := testredis.StartSentinel(t, testredis.SentinelOptions{})
	g := startGateway(t, set.URL(), 2*time.Second)
	r := g.do("GET", "/readyz", nil)
	if r.err != nil || r.status != http.StatusOK {
		t.Fatalf("readyz: %s", r)
	}
	var ready handlers.Readiness
	if err := r.decode(&ready); err != nil {
		t.Fatal(err)
	}
	if ready.Redis.Topology != handlers.Sentinel {
		t.Errorf("topology %q, want sentinel", ready.Redis.Topology)
	}
	if ready.Redis.Primary == nil || *ready.Redis.Primary != set.Primary.Addr() {
		t.Errorf("primary %v, want %s", ready.Redis.Primary, set.Primary.Addr())
	}
	if ready.Redis.DurableReplicas == nil || *ready.Redis.DurableReplicas != "auto" {
		t.Errorf("durableReplicas %v, want auto", ready.Redis.DurableReplicas)
	}
}
