package auth

import (
	"context"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/hashgate/hashgate/internal/sessions/session"
)

func TestPrincipalContext(t *testing.T) {
	t.Parallel()
	p := &Principal{Kind: KindBearer, Subject: "u1", Tenant: "t1", Scopes: []string{"cases:read"}}
	tests := []struct {
		name   string
		ctx    context.Context
		want   *Principal
		wantOK bool
	}{
		{"absent", context.Background(), nil, false},
		{"present", WithPrincipal(context.Background(), p), p, true},
		{"nil principal", WithPrincipal(context.Background(), nil), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := PrincipalFrom(tt.ctx)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("PrincipalFrom = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestPrincipalHasScope(t *testing.T) {
	t.Parallel()
	p := &Principal{Scopes: []string{"cases:read", "quotes:write"}}
	tests := []struct {
		p     *Principal
		scope string
		want  bool
	}{
		{p, "cases:read", true},
		{p, "quotes:write", true},
		{p, "cases:write", false},
		{p, "", false},
		{nil, "cases:read", false},
	}
	for _, tt := range tests {
		if got := tt.p.HasScope(tt.scope); got != tt.want {
			t.Errorf("HasScope(%q) = %v, want %v", tt.scope, got, tt.want)
		}
	}
}

func TestPrincipalFromClaims(t *testing.T) {
	t.Parallel()
	exp := time.Unix(1_800_000_000, 0)
	c := &Claims{
		RegisteredClaims: jwt.RegisteredClaims{Subject: "u1", ID: "j1", ExpiresAt: jwt.NewNumericDate(exp)},
		Tenant:           "t1",
		Scope:            "cases:read quotes:read",
	}
	p := PrincipalFromClaims(c)
	if p.Kind != KindBearer || p.Subject != "u1" || p.Tenant != "t1" || p.TokenID != "j1" ||
		!p.ExpiresAt.Equal(exp) || !p.HasScope("quotes:read") || len(p.Scopes) != 2 {
		t.Errorf("PrincipalFromClaims = %+v", p)
	}
}

// A session principal carries its authenticator's view through the context unchanged; a
// bearer principal has none.
func TestPrincipalSessionView(t *testing.T) {
	t.Parallel()
	v := &session.Session{DeviceLabel: "phone"}
	p := &Principal{Kind: KindSession, Subject: "u1", Tenant: "t1", SessionID: "s_1", Session: v}
	got, ok := PrincipalFrom(WithPrincipal(context.Background(), p))
	if !ok || got.Session != v {
		t.Fatalf("session view lost: %+v", got)
	}
	if b := PrincipalFromClaims(&Claims{Tenant: "t1"}); b.Session != nil {
		t.Fatalf("bearer principal with a session view: %+v", b.Session)
	}
}
