package faults

import (
	"fmt"
	"net/http"

	"github.com/hashgate/hashgate/internal/handlers"
)

// The client calls the tests make, each checking the reply it expects on success.

// session is one session a test created: its id and its token (shown once).
type gwSession struct {
	ID, Token, User string
}

func (g *gateway) createSession(bearer, user string) (gwSession, reply, error) {
	r := g.do("POST", "/v1/sessions", map[string]any{"userId": user, "authLevel": "BASIC",
		"device": map[string]any{"label": "faults"}}, "Authorization", bearer)
	if r.err != nil || r.status != http.StatusCreated {
		return gwSession{}, r, fmt.Errorf("create session: %s", r)
	}
	var tok handlers.SessionToken
	if err := r.decode(&tok); err != nil {
		return gwSession{}, r, err
	}
	if tok.SessionId == "" || tok.Token == "" {
		return gwSession{}, r, fmt.Errorf("create session: no id or token: %s", r)
	}
	return gwSession{ID: tok.SessionId, Token: tok.Token, User: user}, r, nil
}

// authorize is the forward-auth hot path with the session token.
func (g *gateway) authorize(s gwSession) (reply, error) {
	r := g.do("GET", "/v1/authorize", nil, "X-Session-Token", s.Token)
	if r.err != nil || r.status != http.StatusOK {
		return r, fmt.Errorf("authorize %s: %s", s.ID, r)
	}
	if got := r.header.Get("X-Auth-Session"); got != s.ID || r.header.Get("X-Auth-Subject") != s.User {
		return r, fmt.Errorf("authorize %s: X-Auth-Session %q, X-Auth-Subject %q", s.ID, got, r.header.Get("X-Auth-Subject"))
	}
	return r, nil
}

func (g *gateway) getSession(bearer string, s gwSession) (reply, error) {
	r := g.do("GET", "/v1/sessions/"+s.ID, nil, "Authorization", bearer)
	if r.err != nil || r.status != http.StatusOK {
		return r, fmt.Errorf("get session %s: %s", s.ID, r)
	}
	var v handlers.Session
	if err := r.decode(&v); err != nil {
		return r, err
	}
	if v.SessionId != s.ID || v.UserId != s.User {
		return r, fmt.Errorf("get session %s: got session %q of user %q", s.ID, v.SessionId, v.UserId)
	}
	return r, nil
}

// listSessions answers the ids of user's live sessions.
func (g *gateway) listSessions(bearer, user string) (map[string]bool, reply, error) {
	r := g.do("GET", "/v1/users/"+user+"/sessions", nil, "Authorization", bearer)
	if r.err != nil || r.status != http.StatusOK {
		return nil, r, fmt.Errorf("list sessions: %s", r)
	}
	var l handlers.SessionList
	if err := r.decode(&l); err != nil {
		return nil, r, err
	}
	ids := make(map[string]bool, len(l.Items))
	for _, it := range l.Items {
		ids[it.SessionId] = true
	}
	return ids, r, nil
}

func (g *gateway) revokeSession(bearer string, s gwSession) (reply, error) {
	r := g.do("DELETE", "/v1/sessions/"+s.ID, nil, "Authorization", bearer)
	if r.err != nil || r.status != http.StatusNoContent {
		return r, fmt.Errorf("revoke session %s: %s", s.ID, r)
	}
	return r, nil
}

// quote is one quote a test created, with the fields it sent.
type quote struct {
	ID, Customer, Currency string
}

func (g *gateway) createQuote(bearer, customer string) (quote, reply, error) {
	q := quote{Customer: customer, Currency: "EUR"}
	r := g.do("POST", "/v1/quotes", map[string]any{"customerId": customer, "currency": q.Currency,
		"salesChannel": "faults"}, "Authorization", bearer)
	if r.err != nil || r.status != http.StatusCreated {
		return q, r, fmt.Errorf("create quote: %s", r)
	}
	var v handlers.Quote
	if err := r.decode(&v); err != nil {
		return q, r, err
	}
	if v.QuoteId == "" || v.CustomerId != customer {
		return q, r, fmt.Errorf("create quote: unexpected body %s", r)
	}
	q.ID = v.QuoteId
	return q, r, nil
}

func (g *gateway) getQuote(bearer string, q quote) (reply, error) {
	r := g.do("GET", "/v1/quotes/"+q.ID, nil, "Authorization", bearer)
	if r.err != nil || r.status != http.StatusOK {
		return r, fmt.Errorf("get quote %s: %s", q.ID, r)
	}
	var v handlers.Quote
	if err := r.decode(&v); err != nil {
		return r, err
	}
	if v.QuoteId != q.ID || v.CustomerId != q.Customer || string(v.Currency) != q.Currency ||
		v.TotalMinor != v.SubtotalMinor-v.DiscountMinor+v.TaxMinor {
		return r, fmt.Errorf("get quote %s: not what was written: %s", q.ID, r)
	}
	return r, nil
}
