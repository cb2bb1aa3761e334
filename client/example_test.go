package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/hashgate/hashgate/client"
)

// Where the examples find the gateway: the address `go run ./cmd/gateway` prints and the
// bootstrap token it prints (export HG_TOKEN=...). This package's tests point both at a
// gateway of their own.
var (
	baseURL    = "http://localhost:8080"
	adminToken = os.Getenv("HG_TOKEN")
)

// A login service creates a session; the user's frontend then calls with the session token:
// whoami, a step-up to MFA (challenge, then verify with the code the caller delivered), the
// user's devices, and logout.
func Example_sessions() {
	ctx := context.Background()
	svc, err := client.NewClientWithResponses(baseURL, client.WithBearerToken(adminToken))
	if err != nil {
		log.Fatal(err)
	}
	login, err := client.Check(svc.CreateSessionWithResponse(ctx, client.SessionCreateRequest{
		UserId: "example-alice", AuthLevel: client.AuthLevelBASIC,
		Device: &client.DeviceInfo{Label: ptr("Alice's laptop")}}))
	if err != nil {
		log.Fatal(err)
	}
	s := login.JSON201
	fmt.Println("login:", s.Status, s.AuthLevel)

	// The frontend's calls carry the session token, not the service's bearer.
	user, err := client.NewClientWithResponses(baseURL, client.WithSessionToken(s.Token))
	if err != nil {
		log.Fatal(err)
	}
	me, err := client.Check(user.GetCurrentSessionWithResponse(ctx))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("whoami:", me.JSON200.UserId, me.JSON200.AuthLevel)

	// Step-up: the service asks for a challenge and delivers its code out of band.
	ch, err := client.Check(svc.CreateMfaChallengeWithResponse(ctx, s.SessionId))
	if err != nil {
		log.Fatal(err)
	}
	v, err := client.Check(svc.VerifyMfaWithResponse(ctx, s.SessionId, client.MfaVerifyRequest{
		ChallengeId: ch.JSON201.ChallengeId, Code: ch.JSON201.Code}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("step-up:", v.JSON200.Status, v.JSON200.AuthLevel)

	// Verification rotates the token: the user goes on with the new one.
	user, _ = client.NewClientWithResponses(baseURL, client.WithSessionToken(v.JSON200.Token))
	devices, err := client.Check(user.ListMyDevicesWithResponse(ctx, nil))
	if err != nil {
		log.Fatal(err)
	}
	// The view answers the request's device.label at the same place.
	fmt.Println("devices:", len(devices.JSON200.Items), devices.JSON200.Items[0].Device.Label)
	out, err := client.Check(user.LogoutWithResponse(ctx))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("logout:", out.StatusCode())
	// Output:
	// login: ACTIVE BASIC
	// whoami: example-alice BASIC
	// step-up: MFA_VERIFIED MFA
	// devices: 1 Alice's laptop
	// logout: 204
}

// A backend service issues a narrower token for another service, introspects it (RFC 7662)
// and revokes it.
func Example_tokens() {
	ctx := context.Background()
	c, err := client.NewClientWithResponses(baseURL, client.WithBearerToken(adminToken))
	if err != nil {
		log.Fatal(err)
	}
	issued, err := client.Check(c.IssueTokenWithResponse(ctx, client.TokenIssueRequest{
		Subject: "svc-pricing", Scopes: []client.Scope{client.ScopeQuotesRead},
		TokenType: client.TokenIssueRequestTokenTypeService, TtlSeconds: 3600}))
	if err != nil {
		log.Fatal(err)
	}
	tok := issued.JSON201
	in, err := client.Check(c.IntrospectTokenWithResponse(ctx, client.IntrospectRequest{Token: tok.Token}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("active:", in.JSON200.Active, *in.JSON200.Scope, *in.JSON200.Sub)

	reason := "rotated"
	if _, err := client.Check(c.RevokeTokenWithResponse(ctx, tok.TokenId, &client.RevokeTokenParams{Reason: &reason})); err != nil {
		log.Fatal(err)
	}
	in, err = client.Check(c.IntrospectTokenWithResponse(ctx, client.IntrospectRequest{Token: tok.Token}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("after revocation, active:", in.JSON200.Active)
	// Output:
	// active: true quotes:read svc-pricing
	// after revocation, active: false
}

// A quote draft: create, add a line item and set a discount, each write conditional on the
// ETag last read (If-Match); a write with a stale ETag is refused with 412; then submit.
func Example_quotes() {
	ctx := context.Background()
	c, err := client.NewClientWithResponses(baseURL, client.WithBearerToken(adminToken))
	if err != nil {
		log.Fatal(err)
	}
	created, err := client.Check(c.CreateQuoteWithResponse(ctx, nil, client.QuoteCreateRequest{
		CustomerId: "cust-42", Currency: "EUR", SalesChannel: "web"}))
	if err != nil {
		log.Fatal(err)
	}
	id, etag := created.JSON201.QuoteId, created.HTTPResponse.Header.Get("ETag")

	item, err := client.Check(c.PutQuoteItemWithResponse(ctx, id, "line-1", &client.PutQuoteItemParams{IfMatch: etag},
		client.QuoteItemPut{Sku: "SKU-1", Quantity: 3, UnitPriceMinor: 1250}))
	if err != nil {
		log.Fatal(err)
	}
	stale, etag := etag, item.HTTPResponse.Header.Get("ETag")

	discount := client.MoneyMinor(500)
	patch := client.QuotePatch{DiscountMinor: &discount}
	_, err = client.Check(c.PatchQuoteWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, id, &client.PatchQuoteParams{IfMatch: stale}, patch))
	var p *client.Problem
	if errors.As(err, &p) {
		fmt.Println("stale ETag:", p.Status, p.Slug())
	}
	patched, err := client.Check(c.PatchQuoteWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, id, &client.PatchQuoteParams{IfMatch: etag}, patch))
	if err != nil {
		log.Fatal(err)
	}
	etag = patched.HTTPResponse.Header.Get("ETag")

	submitted, err := client.Check(c.SubmitQuoteWithResponse(ctx, id, &client.SubmitQuoteParams{IfMatch: etag}))
	if err != nil {
		log.Fatal(err)
	}
	q := submitted.JSON200
	fmt.Println(q.Status, q.SubtotalMinor, "-", q.DiscountMinor, "+", q.TaxMinor, "=", q.TotalMinor, q.Currency)
	// Output:
	// stale ETag: 412 precondition-failed
	// SUBMITTED 3750 - 500 + 0 = 3250 EUR
}

// An escalation case: open, escalate, resolve, and read its history (newest first).
func Example_cases() {
	ctx := context.Background()
	c, err := client.NewClientWithResponses(baseURL, client.WithBearerToken(adminToken))
	if err != nil {
		log.Fatal(err)
	}
	opened, err := client.Check(c.CreateCaseWithResponse(ctx, nil, client.CaseCreateRequest{
		SubjectRef: "order-1001", AssignedTeam: "support", Reason: "payment failed",
		DueAt: time.Now().Add(24 * time.Hour)}))
	if err != nil {
		log.Fatal(err)
	}
	id := opened.JSON201.CaseId
	esc, err := client.Check(c.EscalateCaseWithResponse(ctx, id, nil, client.CaseTransitionRequest{Reason: "customer called twice"}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(esc.JSON200.Status, "level", esc.JSON200.EscalationLevel)
	res, err := client.Check(c.ResolveCaseWithResponse(ctx, id, nil, client.CaseTransitionRequest{Reason: "refunded"}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.JSON200.Status)
	// The history, newest first, in pages of two: each page's nextCursor asks for the next,
	// until a page has none.
	params := &client.GetCaseHistoryParams{Limit: ptr(2)}
	for page := 1; ; page++ {
		hist, err := client.Check(c.GetCaseHistoryWithResponse(ctx, id, params))
		if err != nil {
			log.Fatal(err)
		}
		for _, h := range hist.JSON200.Items {
			from := "(new)" // the create entry has no fromStatus
			if h.FromStatus != nil {
				from = string(*h.FromStatus)
			}
			fmt.Println(page, h.Transition, from, "->", h.ToStatus)
		}
		if hist.JSON200.NextCursor == nil {
			break
		}
		params.Cursor = hist.JSON200.NextCursor
	}
	// Output:
	// ESCALATED level 1
	// RESOLVED
	// 1 resolve ESCALATED -> RESOLVED
	// 1 escalate OPEN -> ESCALATED
	// 2 create (new) -> OPEN
}

func ptr[T any](v T) *T { return &v }

// Check turns a refusal into a *Problem: here, a quote that does not exist (or belongs to
// another tenant) answers 404.
func ExampleCheck() {
	ctx := context.Background()
	c, err := client.NewClientWithResponses(baseURL, client.WithBearerToken(adminToken))
	if err != nil {
		log.Fatal(err)
	}
	_, err = client.Check(c.GetQuoteWithResponse(ctx, "q_00000000000000000000000000"))
	var p *client.Problem
	if errors.As(err, &p) && p.Status == http.StatusNotFound {
		fmt.Println(p.Status, p.Slug())
	}
	// Output:
	// 404 not-found
}
