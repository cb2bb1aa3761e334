package handlers

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/testredis"
)

type webhookBody struct {
	WebhookID string   `json:"webhookId"`
	URL       string   `json:"url"`
	Events    []string `json:"events"`
	Secret    *string  `json:"secret"`
	ExpiresAt string   `json:"expiresAt"`
}

// TestWebhookLifecycle: register (the secret shown once, never again), read, list, ping a real
// receiver that checks the signature as the specification says, see the ping among the
// deliveries, delete; scopes and tenants kept apart.
func TestWebhookLifecycle(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	h := newHarnessWith(t, s, TestGateway{Prefix: testredis.Prefix(t), Config: func(c *config.Config) {
		c.WebhookAllowPrivate, c.SessionEvents = true, "all" // the webhook names session.*
	}}, nil)
	admin := h.bearer("acme", "webhooks:read", "webhooks:write")
	var secret atomic.Value
	var verified atomic.Int32
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret.Load().(string), "whsec_"))
		m := hmac.New(sha256.New, key)
		m.Write([]byte(r.Header.Get("webhook-id") + "." + r.Header.Get("webhook-timestamp") + "." + string(body)))
		if r.Header.Get("webhook-signature") != "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		verified.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer rcv.Close()

	rec := h.do("POST", "/v1/webhooks", map[string]any{"url": rcv.URL + "/hook", "events": []string{"session.*", "token.revoked"}}, "Authorization", admin)
	if rec.Code != http.StatusCreated || rec.Header().Get("Cache-Control") != "no-store" || !strings.HasPrefix(rec.Header().Get("Location"), "/v1/webhooks/wh_") {
		t.Fatalf("create: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	var created webhookBody
	decode(t, rec, &created)
	if created.Secret == nil || !strings.HasPrefix(*created.Secret, "whsec_") {
		t.Fatalf("created: %+v", created)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(*created.Secret, "whsec_"))
	if err != nil || len(raw) != 32 {
		t.Fatalf("secret %q: %d bytes, %v", *created.Secret, len(raw), err)
	}
	secret.Store(*created.Secret)

	rec = h.do("GET", "/v1/webhooks/"+created.WebhookID, nil, "Authorization", admin)
	var got webhookBody
	decode(t, rec, &got)
	if rec.Code != http.StatusOK || got.Secret != nil || strings.Contains(rec.Body.String(), "whsec_") || got.URL != rcv.URL+"/hook" {
		t.Fatalf("get: %d %s", rec.Code, rec.Body)
	}
	rec = h.do("GET", "/v1/webhooks", nil, "Authorization", admin)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), created.WebhookID) || strings.Contains(rec.Body.String(), "whsec_") {
		t.Fatalf("list: %d %s", rec.Code, rec.Body)
	}

	rec = h.do("POST", "/v1/webhooks/"+created.WebhookID+"/ping", nil, "Authorization", admin)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"status":"DELIVERED"`) || verified.Load() != 1 {
		t.Fatalf("ping: %d %s (verified %d)", rec.Code, rec.Body, verified.Load())
	}
	rec = h.do("GET", "/v1/webhooks/"+created.WebhookID+"/deliveries", nil, "Authorization", admin)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"eventType":"webhook.ping"`) || !strings.Contains(rec.Body.String(), `"statusCode":200`) {
		t.Fatalf("deliveries: %d %s", rec.Code, rec.Body)
	}

	other := h.bearer("globex", "webhooks:read", "webhooks:write")
	for _, p := range []string{"", "/deliveries"} {
		wantProblem(t, h.do("GET", "/v1/webhooks/"+created.WebhookID+p, nil, "Authorization", other), 404, "not-found")
	}
	wantProblem(t, h.do("POST", "/v1/webhooks/"+created.WebhookID+"/ping", nil, "Authorization", other), 404, "not-found")
	reader := h.bearer("acme", "webhooks:read")
	wantProblem(t, h.do("POST", "/v1/webhooks", map[string]any{"url": rcv.URL, "events": []string{"*"}}, "Authorization", reader), 403, "insufficient-scope")
	wantProblem(t, h.do("DELETE", "/v1/webhooks/"+created.WebhookID, nil, "Authorization", reader), 403, "insufficient-scope")

	if rec = h.do("DELETE", "/v1/webhooks/"+created.WebhookID, nil, "Authorization", admin); rec.Code != http.StatusNoContent {
		t.Fatalf("delete: %d %s", rec.Code, rec.Body)
	}
	if rec = h.do("DELETE", "/v1/webhooks/"+created.WebhookID, nil, "Authorization", admin); rec.Code != http.StatusNoContent {
		t.Fatalf("delete again: %d %s", rec.Code, rec.Body)
	}
	wantProblem(t, h.do("GET", "/v1/webhooks/"+created.WebhookID, nil, "Authorization", admin), 404, "not-found")
}

// TestWebhookCreateRefusals: a URL to a private address (unless allowed), a URL that is not
// http(s), an unknown event pattern: 400 naming what to send; over the tenant's quota: 429.
func TestWebhookCreateRefusals(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	h := newHarnessWith(t, s, TestGateway{Prefix: testredis.Prefix(t), Config: func(c *config.Config) { c.TenantMaxWebhooks = 2 }}, nil)
	admin := h.bearer("acme", "webhooks:write")
	for _, body := range []map[string]any{
		{"url": "http://127.0.0.1:8080/hook", "events": []string{"*"}},
		{"url": "http://169.254.169.254/latest/meta-data", "events": []string{"*"}},
		{"url": "http://[::1]/hook", "events": []string{"*"}},
		{"url": "ftp://hooks.example.com/x", "events": []string{"*"}},
		{"url": "https://hooks.example.com/x", "events": []string{"Session.Revoked"}},
		{"url": "https://hooks.example.com/x", "events": []string{}},
	} {
		p := wantProblem(t, h.do("POST", "/v1/webhooks", body, "Authorization", admin), 400, "validation")
		if p.Detail == "" {
			t.Errorf("%v: no detail", body)
		}
	}
	for range 2 {
		if rec := h.do("POST", "/v1/webhooks", map[string]any{"url": "https://hooks.example.com/x", "events": []string{"*"}}, "Authorization", admin); rec.Code != 201 {
			t.Fatalf("create: %d %s", rec.Code, rec.Body)
		}
	}
	wantProblem(t, h.do("POST", "/v1/webhooks", map[string]any{"url": "https://hooks.example.com/x", "events": []string{"*"}}, "Authorization", admin), 429, "quota-exceeded")
}
