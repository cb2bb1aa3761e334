package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/accessrules"
	"github.com/hashgate/hashgate/internal/sessions"
	"github.com/hashgate/hashgate/internal/testredis"
)

// BenchmarkAuthorizeRules50 is BenchmarkAuthorizeCached (memo hit) with a 50-rule file whose
// request is decided by the last rule (every rule tried: hosts, methods, globs with * and **),
// the forwarded method, host and URI sent as Caddy sends them. Compare with
// BenchmarkAuthorizeCached (no rules) in the same run:
//
//	source .cache/redis/env.sh && go test -run '^$' -bench 'Authorize(Cached|Rules50)' -benchmem ./internal/handlers/
func BenchmarkAuthorizeRules50(b *testing.B) {
	var rules strings.Builder
	rules.WriteString("default: deny\nrules:\n")
	for i := range 49 {
		switch i % 3 {
		case 0:
			fmt.Fprintf(&rules, "  - paths: [\"/svc%d/**\", \"/svc%d\"]\n    require: {level: MFA}\n", i, i)
		case 1:
			fmt.Fprintf(&rules, "  - hosts: [\"h%d.example.com\", \"*.h%d.example.com\"]\n    policy: deny\n", i, i)
		default:
			fmt.Fprintf(&rules, "  - methods: [POST, PUT]\n    paths: [\"/api/*/v%d/**\"]\n    require: {scopes: [quotes:write]}\n", i)
		}
	}
	rules.WriteString("  - paths: [\"/**\"]\n    require: {level: BASIC}\n")
	path := filepath.Join(b.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, []byte(rules.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	holder, err := accessrules.Open(path, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		b.Fatal(err)
	}
	if n := len(holder.Current().Rules); n != 50 {
		b.Fatalf("%d rules", n)
	}
	s := benchRedis8(b)
	prefix := testredis.Prefix(b)
	svc, counter := newSessionService(b, s, prefix, 2*time.Second)
	e := newHarnessOn(b, s, prefix, nil, func(_ *harness, d *Deps) { d.Sessions, d.SessionAuth, d.Rules = svc, svc, holder }).e
	is, err := svc.Create(context.Background(), "acme", sessions.CreateInput{UserID: "alice", AuthLevel: "BASIC"})
	if err != nil {
		b.Fatal(err)
	}
	serve := func(b *testing.B) {
		req := httptest.NewRequest("GET", "/v1/authorize", nil)
		req.Header.Set(SessionHeaderName, is.Token)
		req.Header.Set("X-Forwarded-Method", "GET")
		req.Header.Set("X-Forwarded-Host", "app.example.com")
		req.Header.Set("X-Forwarded-Uri", "/orders/42/items?page=2")
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || rec.Header().Get("X-Auth-Subject") != "alice" {
			b.Fatalf("authorize: %d %v %s", rec.Code, rec.Header(), rec.Body)
		}
	}
	serve(b)
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		counter.Reset()
		n := 0
		for b.Loop() {
			serve(b)
			n++
		}
		b.ReportMetric(float64(counter.Sent())/float64(n), "redis-cmds/op")
	})
}
