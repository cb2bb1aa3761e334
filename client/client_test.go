package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashgate/hashgate/client"
)

// A refusal from the gateway is a *Problem with the RFC 9457 fields the gateway sent; the
// call's typed response is still returned.
func TestCheckTurnsARefusalIntoAProblem(t *testing.T) {
	ctx := context.Background()
	c, err := client.NewClientWithResponses(baseURL, client.WithBearerToken(adminToken))
	if err != nil {
		t.Fatal(err)
	}
	rsp, err := client.Check(c.CreateSessionWithResponse(ctx, client.SessionCreateRequest{UserId: "", AuthLevel: "ROOT"}))
	var p *client.Problem
	if !errors.As(err, &p) {
		t.Fatalf("err %v (%T) is not a *client.Problem", err, err)
	}
	if p.Status != http.StatusBadRequest || p.Slug() != "validation" || p.Errors == nil || len(*p.Errors) == 0 || p.RequestId == nil {
		t.Fatalf("problem %+v", p)
	}
	if rsp == nil || rsp.StatusCode() != http.StatusBadRequest || rsp.ApplicationproblemJSON400 == nil {
		t.Fatalf("typed response lost: %+v", rsp)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "hashgate: 400 ") || !strings.Contains(msg, *p.Detail) {
		t.Fatalf("Error() = %q", msg)
	}

	// Without a credential: 401, the unauthenticated problem.
	anon, _ := client.NewClientWithResponses(baseURL)
	_, err = client.Check(anon.ListTokensWithResponse(ctx, nil))
	if !errors.As(err, &p) || p.Status != http.StatusUnauthorized || p.Slug() != "unauthenticated" {
		t.Fatalf("no credential: %v", err)
	}
	// A success is no error.
	if rsp, err := client.Check(anon.GetHealthzWithResponse(ctx)); err != nil || rsp.JSON200 == nil {
		t.Fatalf("healthz: %v", err)
	}
}

// An error answer that is not a problem (a proxy's HTML page) still gives a *Problem, with
// the status and its text; a transport failure stays what it is.
func TestCheckWithoutAProblemBody(t *testing.T) {
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("<html>502 Bad Gateway</html>"))
	}))
	defer proxy.Close()
	c, _ := client.NewClientWithResponses(proxy.URL)
	_, err := client.Check(c.GetReadyzWithResponse(context.Background()))
	var p *client.Problem
	if !errors.As(err, &p) || p.Status != http.StatusBadGateway || p.Title != "Bad Gateway" || p.Type != "about:blank" {
		t.Fatalf("non-problem 502: %v %+v", err, p)
	}

	proxy.Close()
	_, err = client.Check(c.GetReadyzWithResponse(context.Background()))
	if err == nil || errors.As(err, &p) {
		t.Fatalf("transport failure: %v", err)
	}
}

// The two credentials: a client made with a session token is the end user; a per-request
// credential replaces the client's.
func TestCredentials(t *testing.T) {
	ctx := context.Background()
	svc, _ := client.NewClientWithResponses(baseURL, client.WithBearerToken(adminToken))
	s, err := client.Check(svc.CreateSessionWithResponse(ctx, client.SessionCreateRequest{UserId: "cred-test", AuthLevel: client.AuthLevelBASIC}))
	if err != nil {
		t.Fatal(err)
	}
	user, _ := client.NewClientWithResponses(baseURL, client.WithSessionToken(s.JSON201.Token))
	me, err := client.Check(user.GetCurrentSessionWithResponse(ctx))
	if err != nil || me.JSON200.UserId != "cred-test" {
		t.Fatalf("whoami with the session token: %v", err)
	}
	// The service's client calls as the user for one request.
	me, err = client.Check(svc.GetCurrentSessionWithResponse(ctx, client.SessionAuth(s.JSON201.Token)))
	if err != nil || me.JSON200.SessionId != s.JSON201.SessionId {
		t.Fatalf("whoami with SessionAuth: %v", err)
	}
	// The user's client calls as the service for one request.
	if _, err := client.Check(user.GetSessionWithResponse(ctx, s.JSON201.SessionId, client.BearerAuth(adminToken))); err != nil {
		t.Fatalf("GetSession with BearerAuth: %v", err)
	}
	// A session token is no bearer.
	var p *client.Problem
	if _, err := client.Check(user.GetSessionWithResponse(ctx, s.JSON201.SessionId)); !errors.As(err, &p) || p.Status != http.StatusUnauthorized {
		t.Fatalf("GetSession with only a session token: %v", err)
	}
}

// The accessors read a Problem whatever the gateway (or a proxy) left out, and a nil one,
// without panicking: the README's first snippet dereferenced p.Detail, which a proxy's 502
// leaves nil.
func TestProblemAccessorsNeverPanic(t *testing.T) {
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte(`{"type":"about:blank","title":"Bad Gateway","status":502}`))
	}))
	defer proxy.Close()
	c, _ := client.NewClientWithResponses(proxy.URL)
	_, err := client.Check(c.GetReadyzWithResponse(context.Background()))
	var p *client.Problem
	if !errors.As(err, &p) || p.Detail != nil {
		t.Fatalf("a problem without detail: %v %+v", err, p)
	}
	var none *client.Problem
	for _, q := range []*client.Problem{p, none, {}} {
		if q.DetailText() != "" || q.RequestID() != "" || q.FieldErrors() != nil || q.RetryAfterDuration() != 0 {
			t.Errorf("%+v: accessors read members that are not there", q)
		}
		_ = q.Slug() + q.Error()
	}
	if p.Slug() != "about:blank" || p.Error() != "hashgate: 502 Bad Gateway" {
		t.Errorf("Slug %q, Error %q", p.Slug(), p.Error())
	}

	// What the gateway sends is read through them.
	svc, _ := client.NewClientWithResponses(baseURL, client.WithBearerToken(adminToken))
	_, err = client.Check(svc.CreateSessionWithResponse(context.Background(), client.SessionCreateRequest{UserId: "u", AuthLevel: "ROOT"}))
	if !errors.As(err, &p) || p.DetailText() == "" || p.RequestID() == "" || len(p.FieldErrors()) == 0 ||
		p.FieldErrors()[0].Where() != "/authLevel" {
		t.Fatalf("a validation problem: %v %+v", err, p)
	}
}
