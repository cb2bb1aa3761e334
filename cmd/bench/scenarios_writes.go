package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/hashgate/hashgate/client"
)

// The write scenarios: MFA verify, quote patch, case escalation, session create and revoke.

// revokePlans: DELETE /v1/sessions/{id} over sessions of their own (distinct users): the first
// pass revokes, later ones find them gone (204 as well). With a replica online every one is a
// durable write: the script (or, for a gone session, a 1 s marker) and WAIT 1 + WAITAOF on the
// connection that wrote; without one, the script alone.
func (f *fixtures) revokePlans(key, what string) []plan {
	return []plan{{Key: key, Name: "DELETE /v1/sessions/{id}, " + what, Expect: []int{204}, durable: strings.Contains(key, "replica"), prepare: func(ctx context.Context) (wrkScript, wrkScript, error) {
		const n = 1000
		ids := make([]string, 2*n)
		err := parallel(ctx, len(ids), 32, func(ctx context.Context, i int) error {
			s, err := f.session(ctx, fmt.Sprintf("%s-%d", key, i), nil)
			ids[i] = s.ID
			return err
		})
		if err != nil {
			return wrkScript{}, wrkScript{}, err
		}
		script := func(ids []string) wrkScript {
			items := make([]wrkItem, len(ids))
			for i, id := range ids {
				items[i] = wrkItem{Path: "/v1/sessions/" + id}
			}
			return wrkScript{Method: "DELETE", Headers: map[string]string{"Authorization": "Bearer " + f.api.token}, Items: items}
		}
		return script(ids[:n]), script(ids[n:]), nil
	}}}
}

// mfaVerify: one session and live challenge per connection, verified with a wrong code: the
// first attempts answer 422, then the user's counter answers 429 until the window ends.
func (f *fixtures) mfaVerify(ctx context.Context) (wrkScript, wrkScript, error) {
	n := f.cfg.connections
	f.mfa = make([]mfaTarget, n)
	err := parallel(ctx, n, 16, func(ctx context.Context, i int) error {
		s, err := f.session(ctx, fmt.Sprintf("bench-mfa-%d", i), nil)
		if err != nil {
			return err
		}
		op := "POST /v1/sessions/{id}/mfa/challenge"
		rsp, err := client.Check(f.api.cl.CreateMfaChallengeWithResponse(ctx, s.ID))
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		ch := rsp.JSON201
		if ch == nil || len(ch.Code) != 6 || ch.ChallengeId == "" {
			return fmt.Errorf("%s: unexpected answer (%s)", op, rsp.Body)
		}
		wrong := ch.Code[:5] + string('0'+(ch.Code[5]-'0'+1)%10)
		f.mfa[i] = mfaTarget{SessionID: s.ID, ChallengeID: ch.ChallengeId, WrongCode: wrong}
		return nil
	})
	if err != nil {
		return wrkScript{}, wrkScript{}, err
	}
	items := make([]wrkItem, n)
	for i, m := range f.mfa {
		body, _ := json.Marshal(map[string]string{"challengeId": m.ChallengeID, "code": m.WrongCode})
		items[i] = wrkItem{Path: "/v1/sessions/" + m.SessionID + "/mfa/verify", Body: string(body)}
	}
	return same(wrkScript{Method: "POST", Headers: f.json(), Items: items, Tally: true})
}

// quotePatch: each thread owns its quotes and PATCHes one only after the previous PATCH of
// it answered, with the ETag that answer carried (so If-Match is always current).
func (f *fixtures) quotePatch(ctx context.Context) (wrkScript, wrkScript, error) {
	per := f.cfg.connections + 16
	qs, err := f.createQuotes(ctx, 2*per+1)
	if err != nil {
		return wrkScript{}, wrkScript{}, err
	}
	f.quoteSample = qs[2*per]
	f.addQuoteItems(ctx, 3)
	return f.quotePatchScript(qs[:per]), f.quotePatchScript(qs[per : 2*per]), nil
}

// quotePatchAgain is quote-patch's script for one more run (the paired rounds): quotes of its
// own, since a run leaves the ETags in the last script stale (a stale quote answers 412 and is
// retired).
func (f *fixtures) quotePatchAgain(ctx context.Context, base string, _ float64) (wrkScript, error) {
	a, err := newAPI(base, f.api.token)
	if err != nil {
		return wrkScript{}, err
	}
	defer a.hc.CloseIdleConnections()
	qs, err := createQuotes(ctx, a, f.cfg.connections+16)
	return f.quotePatchScript(qs), err
}

func (f *fixtures) quotePatchScript(qs []quoteRef) wrkScript {
	items := make([]wrkItem, len(qs))
	for i, q := range qs {
		items[i] = wrkItem{Path: q.ID, Value: q.ETag}
	}
	h := f.json()
	h["Content-Type"] = "application/merge-patch+json"
	return wrkScript{Headers: h, Items: items, QuotePatch: true, Tally: true}
}

// addQuoteItems puts n line items on the memory-sample quote (best effort: the items
// endpoint may not be built yet).
func (f *fixtures) addQuoteItems(ctx context.Context, n int) {
	etag := f.quoteSample.ETag
	for i := range n {
		rsp, err := client.Check(f.api.cl.PutQuoteItemWithResponse(ctx, f.quoteSample.ID, fmt.Sprintf("item-%d", i),
			&client.PutQuoteItemParams{IfMatch: etag},
			client.QuoteItemPut{Sku: fmt.Sprintf("SKU-%04d", i), Quantity: 2, UnitPriceMinor: 1999}))
		if err != nil {
			return
		}
		etag = rsp.HTTPResponse.Header.Get("ETag")
		f.quoteItems++
	}
}

// createCases opens n cases of team, due in 48 hours (spread over the next minutes, a second
// apart, so a queue has an order).
func (f *fixtures) createCases(ctx context.Context, n int, team string) ([]string, error) {
	return createCases(ctx, f.api, n, team)
}

// createCases opens n cases of team through a (its token's tenant).
func createCases(ctx context.Context, a *api, n int, team string) ([]string, error) {
	ids := make([]string, n)
	due := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	err := parallel(ctx, n, 32, func(ctx context.Context, i int) error {
		rsp, err := client.Check(a.cl.CreateCaseWithResponse(ctx, nil, client.CaseCreateRequest{
			SubjectRef: fmt.Sprintf("order:bench-%d", i), AssignedTeam: team, DueAt: due.Add(time.Duration(i%600) * time.Second), Reason: "benchmark"}))
		if err != nil {
			return fmt.Errorf("POST /v1/cases: %w", err)
		}
		if rsp.JSON201 == nil || rsp.JSON201.CaseId == "" {
			return fmt.Errorf("POST /v1/cases: no caseId in the answer")
		}
		ids[i] = rsp.JSON201.CaseId
		return nil
	})
	return ids, err
}

// The bench gateway's case quota (GATEWAY_TENANT_MAX_CASES at its bound), and what the other
// rows may hold of it (case-list's listCases among them): case-escalate's set-up stays within
// the rest.
const (
	benchMaxCases       = 100_000
	benchCasesElsewhere = 1_000 + listCases
	caseEscalateMaxRate = 30_000 // req/s: about twice what case-escalate measures on this VM
)

// caseEscalate: every case is escalated caseMaxEscalation times, then the script moves on.
// Enough cases for the run are created first, sized from an upper bound of the rate.
func (f *fixtures) caseEscalate(ctx context.Context) (wrkScript, wrkScript, error) {
	// Sized from the fastest row so far, but a write with its script never runs as fast as a
	// read from memory: at most caseEscalateMaxRate (sized from a 60k req/s read row, about
	// 99,000 cases made wrk end without its result line; every case also costs the quota).
	rate := float64(caseEscalateMaxRate)
	if f.rateHint != nil && f.rateHint() > 0 {
		rate = min(f.rateHint(), caseEscalateMaxRate)
	}
	nw, nm := escalateCases(rate, 1.25, f.cfg.warmup, f.cfg.threads), escalateCases(rate, 1.25, f.cfg.duration, f.cfg.threads)
	room := benchMaxCases - benchCasesElsewhere
	if f.cfg.selected("case-escalate") && f.cfg.selected("case-escalate"+noEventsSuffix) {
		room /= 2 // the row runs twice, events on and off, over cases of its own
	}
	if nw+nm+1 > room {
		// The rate hint comes from a faster row: never ask past the tenant's case quota.
		nw, nm = nw*room/(nw+nm+1), nm*room/(nw+nm+1)
	}
	ids, err := f.createCases(ctx, nw+nm+1, "support")
	if err != nil {
		return wrkScript{}, wrkScript{}, err
	}
	if f.caseFresh == "" { // the memory figures' samples: the first run's
		f.caseFresh, f.caseUsed = ids[nw+nm], ids[nw]
	}
	return escalateScript(f.api.token, ids[:nw]), escalateScript(f.api.token, ids[nw:nw+nm]), nil
}

// escalateAgainMargin: a paired run's cases cover this many times the rows' faster rate (a
// round may run faster than its row; past the cases, escalations answer 409, which the
// paired rounds refuse).
const escalateAgainMargin = 1.5

// caseEscalateAgain is case-escalate's script for one more run at about rate req/s (the
// paired rounds): cases of their own, in a tenant of their own (minted for the run), since
// the row's tenant spent most of its case quota on the rows.
func (f *fixtures) caseEscalateAgain(ctx context.Context, base string, rate float64) (wrkScript, error) {
	if f.mint == nil {
		return wrkScript{}, errors.New("case-escalate again: no way to mint a tenant's token")
	}
	f.againRuns++
	tok, err := f.mint(ctx, fmt.Sprintf("bench-escalate-%d", f.againRuns))
	if err != nil {
		return wrkScript{}, err
	}
	a, err := newAPI(base, tok)
	if err != nil {
		return wrkScript{}, err
	}
	defer a.hc.CloseIdleConnections()
	n := min(escalateCases(rate, escalateAgainMargin, f.cfg.duration, f.cfg.threads), benchMaxCases)
	ids, err := createCases(ctx, a, n, "support")
	return escalateScript(tok, ids), err
}

// escalateCases is how many cases a run of d at rate req/s escalates (times margin), at least
// two per wrk thread.
func escalateCases(rate, margin float64, d time.Duration, threads int) int {
	return max(int(math.Ceil(rate*margin*d.Seconds()/caseMaxEscalation)), 2*threads)
}

// escalateScript escalates each case caseMaxEscalation times with token, then the next.
func escalateScript(token string, ids []string) wrkScript {
	items := make([]wrkItem, len(ids))
	for i, id := range ids {
		items[i] = wrkItem{Path: "/v1/cases/" + id + "/escalate", Body: `{"reason":"benchmark escalation"}`}
	}
	return wrkScript{Method: "POST", Headers: jsonHeaders(token), Items: items, Repeat: caseMaxEscalation, Tally: true}
}

// sessionCreate: a new user per request (the per-user session bound never interferes).
func (f *fixtures) sessionCreate(ctx context.Context) (wrkScript, wrkScript, error) {
	s := wrkScript{Method: "POST", Headers: f.json(), Items: []wrkItem{{Path: "/v1/sessions"}}}
	warm, measure := s, s
	warm.CounterBody = `{"userId":"bench-w-%d-%d","authLevel":"BASIC"}`
	measure.CounterBody = `{"userId":"bench-m-%d-%d","authLevel":"BASIC"}`
	return warm, measure, nil
}
