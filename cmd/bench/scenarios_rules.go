package main

import (
	"context"
	"fmt"
	"strings"
)

// The access rules' cost (issue 25): authorize by session cookie, with the forwarded request a
// proxy sends, on a gateway with a GATEWAY_ACCESS_RULES file and on one without, paired.

// rulesCount is the number of rules in the benchmark's file.
const rulesCount = 50

// The forwarded request of the rules scenario: it matches the file's second-to-last rule, so
// every rule before it is walked (and fails on its hosts, methods or paths).
const (
	rulesMethod = "GET"
	rulesHost   = "app.bench.example"
	rulesURI    = "/app/orders/42?view=full"
)

// rulesFile is an access rules file of n rules (n ≥ 2) in the shapes users write: per-service
// API reads by host, MFA admin areas by group, token-only writes by host wildcard and scope,
// public assets by extension, internal areas denied. The request (rulesMethod, rulesHost,
// rulesURI) misses the first n-2 and matches rule n-2 (from 0); the last is a catch-all.
func rulesFile(n int) []byte {
	var b strings.Builder
	b.WriteString("default: deny\nrules:\n")
	for i := range n - 2 {
		switch i % 5 {
		case 0:
			fmt.Fprintf(&b, "  - name: svc%d-read\n    hosts: [\"svc%d.example.com\"]\n    methods: [GET, HEAD]\n    paths: [\"/api/v1/svc%d/**\"]\n    require: {level: BASIC}\n", i, i, i)
		case 1:
			fmt.Fprintf(&b, "  - name: svc%d-admin\n    paths: [\"/admin/svc%d/**\", \"/admin/svc%d\"]\n    require: {level: MFA, groups: [admins, svc%d-admins]}\n", i, i, i, i)
		case 2:
			fmt.Fprintf(&b, "  - name: tenant%d-writes\n    hosts: [\"*.tenant%d.example.com\"]\n    methods: [POST, PUT, PATCH, DELETE]\n    paths: [\"/orders/**\"]\n    require: {scopes: [\"orders%d:write\"], kinds: [token]}\n", i, i, i)
		case 3:
			fmt.Fprintf(&b, "  - name: svc%d-assets\n    paths: [\"/public/svc%d/*.js\", \"/public/svc%d/*.css\", \"/public/svc%d/img/**\"]\n    policy: allow\n", i, i, i, i)
		default:
			fmt.Fprintf(&b, "  - name: svc%d-internal\n    paths: [\"/internal/svc%d/**\"]\n    policy: deny\n", i, i)
		}
	}
	fmt.Fprintf(&b, "  - name: app\n    hosts: [%q]\n    methods: [GET, HEAD]\n    paths: [\"/app/**\"]\n    require: {level: BASIC, kinds: [session]}\n", rulesHost)
	b.WriteString("  - name: everything-else\n    paths: [\"/**\"]\n    require: {level: MFA}\n")
	return []byte(b.String())
}

// rulesPlans: authorize by session cookie with the forwarded request, on the gateway with the
// rules (authz-rules) and, next to it, the same configuration without them (authz-norules).
func (f *fixtures) rulesPlans() (rules, noRules plan) {
	return plan{Key: "authz-rules", Name: fmt.Sprintf("GET /v1/authorize, session cookie, %d access rules", rulesCount), Expect: []int{200}, prepare: f.authzForwarded},
		plan{Key: "authz-norules", Name: "GET /v1/authorize, session cookie, same request, no rules", Expect: []int{200}, prepare: f.authzForwarded}
}

// authzForwarded is authz-session with the headers nginx/Caddy/Traefik forward.
func (f *fixtures) authzForwarded(ctx context.Context) (wrkScript, wrkScript, error) {
	s, _, err := f.authzSession(ctx)
	if err != nil {
		return wrkScript{}, wrkScript{}, err
	}
	s.Headers = map[string]string{"X-Forwarded-Method": rulesMethod, "X-Forwarded-Host": rulesHost,
		"X-Forwarded-Uri": rulesURI, "X-Forwarded-Proto": "https"}
	return same(s)
}
