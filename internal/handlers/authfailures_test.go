package handlers

import (
	"context"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/hashgate/hashgate/internal/telemetry"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestAuthFailuresCountedByReason: refused authentications show on /metrics as
// hashgate_auth_failures by reason and by the credential sent — no credential, an unknown
// session token, a bad bearer token, a token without the operation's scope.
func TestAuthFailuresCountedByReason(t *testing.T) {
	t.Parallel()
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{ServiceName: "hashgate-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	b := testredis.Named(t, "embedded")
	h := newHarnessOn(t, testredis.Open(t, b), testredis.Prefix(t), tel, nil)
	const unknown = "hgs_AAAAAAAAAAAA_AAAAAAAAAAAAAAAAAA_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	for range 3 {
		h.do("GET", "/v1/authorize", nil)
	}
	for range 2 {
		h.do("GET", "/v1/authorize", nil, "X-Session-Token", unknown)
	}
	h.do("GET", "/v1/authorize", nil, "Authorization", "Bearer not.a.jwt")
	h.do("GET", "/v1/tokens", nil, "Authorization", h.bearer("acme", "quotes:read"))
	if rec := h.do("GET", "/v1/authorize", nil, "Authorization", h.bearer("acme", "quotes:read")); rec.Code != 200 {
		t.Fatalf("a good bearer: %d %s", rec.Code, rec.Body)
	}

	rec := httptest.NewRecorder()
	tel.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	page := rec.Body.String()
	for _, want := range [][3]string{
		{"none", "unauthenticated", "3"},
		{"session", "invalid-credentials", "2"},
		{"bearer", "invalid-credentials", "1"},
		{"bearer", "insufficient-scope", "1"},
	} {
		line := regexp.MustCompile(`(?m)^hashgate_auth_failures_total\{credential="` + want[0] + `",[^}]*reason="` + want[1] + `"\} ` + want[2] + `$`)
		if !line.MatchString(page) {
			t.Errorf("/metrics counts no %s refusals of reason %s with credential %s:\n%s", want[2], want[1], want[0],
				grepLines(page, "hashgate_auth_failures"))
		}
	}
}

// grepLines is the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
