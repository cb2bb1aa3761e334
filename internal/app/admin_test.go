package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashgate/hashgate/internal/app"
	"github.com/hashgate/hashgate/internal/handlers"
	"github.com/hashgate/hashgate/internal/telemetry"
	"github.com/hashgate/hashgate/internal/testredis"
)

// The API port tells nobody where Redis is or what it runs, and serves no metrics; the
// operator listener's handler has both: the detailed readiness and Prometheus text.
func TestReadinessDetailOnlyOnTheOperatorListener(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{ServiceName: "hashgate-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	g, err := app.New(defaults(t), s, app.Options{Version: "v-test", Telemetry: tel})
	if err != nil {
		t.Fatal(err)
	}
	get := func(h http.Handler, path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec
	}
	api := get(g.Echo, "/readyz")
	if api.Code != 200 {
		t.Fatalf("API /readyz %d %s", api.Code, api.Body)
	}
	for _, leak := range []string{"serverVersion", "primary", "topology", "v-test", s.Caps.ServerVersion} {
		if leak != "" && strings.Contains(api.Body.String(), leak) {
			t.Errorf("API /readyz tells %q: %s", leak, api.Body)
		}
	}
	if rec := get(g.Echo, "/metrics"); rec.Code != http.StatusNotFound {
		t.Errorf("API /metrics answered %d (%d bytes), want 404", rec.Code, rec.Body.Len())
	}

	rec := get(g.Admin, "/readyz")
	var d handlers.ReadinessDetail
	if err := json.Unmarshal(rec.Body.Bytes(), &d); rec.Code != 200 || err != nil {
		t.Fatalf("operator /readyz %d %s (%v)", rec.Code, rec.Body, err)
	}
	if d.Status != "ok" || d.Version != "v-test" || d.Redis.Topology == "" || d.Redis.FieldExpiry == "" || d.Redis.ServerVersion != s.Caps.ServerVersion {
		t.Errorf("operator /readyz: %+v", d)
	}
	if rec := get(g.Admin, "/metrics"); rec.Code != 200 || !strings.Contains(rec.Body.String(), "go_goroutines") {
		t.Errorf("operator /metrics %d", rec.Code)
	}
}
