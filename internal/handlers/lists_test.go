package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// listPage is one page of any list: its entries undecoded, the next cursor.
type listPage struct {
	Items      []map[string]json.RawMessage `json:"items"`
	NextCursor *string                      `json:"nextCursor"`
}

// walkPages follows a list's Link headers from first (limit per page) and returns the value of
// each of fields of each entry, joined by a space, in the order listed. A page without Link
// must be the last (no nextCursor); every Link must name the body's nextCursor. between runs
// after each page.
func walkPages(t *testing.T, h *harness, first string, fields []string, between func(), headers ...string) []string {
	t.Helper()
	var out []string
	target := first
	for pages := 0; target != ""; pages++ {
		rec := h.do("GET", target, nil, headers...)
		if rec.Code != http.StatusOK || pages > 200 {
			t.Fatalf("GET %s: %d %s", target, rec.Code, rec.Body)
		}
		var p listPage
		decode(t, rec, &p)
		for _, it := range p.Items {
			vals := make([]string, len(fields))
			for i, f := range fields {
				vals[i] = strings.Trim(string(it[f]), `"`)
			}
			out = append(out, strings.Join(vals, " "))
		}
		link := rec.Header().Get("Link")
		switch {
		case p.NextCursor == nil && link != "":
			t.Fatalf("GET %s: last page with Link %q", target, link)
		case p.NextCursor != nil && !strings.Contains(link, "cursor="+*p.NextCursor+">") && !strings.Contains(link, "cursor="+*p.NextCursor+"&"):
			t.Fatalf("GET %s: Link %q does not name nextCursor %s", target, link, *p.NextCursor)
		}
		target = ""
		if link != "" {
			target = strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`)
		}
		if between != nil {
			between()
		}
	}
	return out
}

// wantWalk checks a walk's invariant: no entry twice, and every stable one (unchanged during
// the walk) listed.
func wantWalk(t *testing.T, walked, stable []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, id := range walked {
		if seen[id] {
			t.Fatalf("%s listed twice in %v", id, walked)
		}
		seen[id] = true
	}
	for _, id := range stable {
		if !seen[id] {
			t.Fatalf("%s (unchanged during the walk) skipped; walked %v", id, walked)
		}
	}
}

// concurrently runs n writers, each calling write(writer, step) until stop is closed or it
// has written max times, and returns a function that stops them and waits (idempotent: defer
// it as well, so no writer outlives a failed test).
func concurrently(n, max int, write func(w, i int)) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < max; i++ {
				select {
				case <-done:
					return
				default:
				}
				write(w, i)
			}
		}()
	}
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

// wantOrder checks that each entry of walked comes before the next by before.
func wantOrder(t *testing.T, walked []string, before func(a, b string) bool) {
	t.Helper()
	for i := 1; i < len(walked); i++ {
		if !before(walked[i-1], walked[i]) {
			t.Fatalf("%s listed before %s: %v", walked[i-1], walked[i], walked)
		}
	}
}

// lastWords is the last space-separated word of each of s.
func lastWords(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = v[strings.LastIndexByte(v, ' ')+1:]
	}
	return out
}

const walkWriters = 8

// Every list that pages walks consistently while others write: the user's sessions and the
// caller's devices while sessions of the user are created and revoked, a draft's items while
// items are put and deleted on both sides of the cursor, a case's history while the case
// keeps moving. No entry twice, none of the stable ones skipped; each in the list's order.
func TestListPageWalksWithConcurrentWriters(t *testing.T) {
	t.Parallel()
	pause := func() { time.Sleep(3 * time.Millisecond) } // lets the writers run between pages
	eachBackendHarness(t, func(t *testing.T, h *harness) {
		t.Run("sessions", func(t *testing.T) {
			admin := h.bearer("acme", "sessions:read", "sessions:write")
			var stable []string
			var token string
			for i := range 20 {
				s := h.createSession("acme", "walker", map[string]any{"device": map[string]any{"label": fmt.Sprintf("stable-%d", i)}})
				stable, token = append(stable, s.SessionId), s.Token
			}
			writers := make([]string, walkWriters)
			for w := range writers {
				writers[w] = h.bearer("acme", "sessions:write")
			}
			stop := concurrently(walkWriters, 40, func(w, _ int) {
				rec := h.do("POST", "/v1/sessions", map[string]any{"userId": "walker", "authLevel": "BASIC"}, "Authorization", writers[w])
				var s SessionToken
				if rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &s) != nil {
					t.Errorf("writer create: %d %s", rec.Code, rec.Body)
					return
				}
				if rec := h.do("DELETE", "/v1/sessions/"+s.SessionId, nil, "Authorization", writers[w]); rec.Code != http.StatusNoContent {
					t.Errorf("writer revoke: %d %s", rec.Code, rec.Body)
				}
			})
			defer stop()
			byCreation := []string{"createdAt", "sessionId"}
			users := walkPages(t, h, "/v1/users/walker/sessions?limit=3", byCreation, pause, "Authorization", admin)
			devices := walkPages(t, h, "/v1/session/devices?limit=4", byCreation, pause, "X-Session-Token", token)
			stop()
			for _, walked := range [][]string{users, devices} {
				// Newest first (then by id): a timestamp always has milliseconds, so strings order.
				wantOrder(t, walked, func(a, b string) bool { return a > b })
				wantWalk(t, lastWords(walked), stable)
			}
		})
		t.Run("quote items", func(t *testing.T) {
			auth := h.bearer("acme", "quotes:read", "quotes:write")
			rec := h.do("POST", "/v1/quotes", quoteBody, "Authorization", auth)
			wantStatus(t, rec, http.StatusCreated)
			var q quoteJSON
			decode(t, rec, &q)
			path := "/v1/quotes/" + q.QuoteId
			item := map[string]any{"sku": "SKU-1", "quantity": 1, "unitPriceMinor": 100}
			var stable []string
			for i := range 20 {
				id := fmt.Sprintf("m-%02d", i)
				wantStatus(t, h.do("PUT", path+"/items/"+id, item, "Authorization", auth, "If-Match", "*"), http.StatusOK)
				stable = append(stable, id)
			}
			// Writers' items sort before, between and after the stable ones.
			sides := []string{"a-", "m-05x", "m-12x", "z-"}
			stop := concurrently(walkWriters, 40, func(w, i int) {
				id := fmt.Sprintf("%s%d-%d", sides[(w+i)%len(sides)], w, i)
				if rec := h.do("PUT", path+"/items/"+id, item, "Authorization", auth, "If-Match", "*"); rec.Code != http.StatusOK {
					t.Errorf("writer put: %d %s", rec.Code, rec.Body)
				}
				if rec := h.do("DELETE", path+"/items/"+id, nil, "Authorization", auth, "If-Match", "*"); rec.Code != http.StatusOK && rec.Code != http.StatusNoContent {
					t.Errorf("writer delete: %d %s", rec.Code, rec.Body)
				}
			})
			defer stop()
			walked := walkPages(t, h, path+"/items?limit=3", []string{"itemId"}, pause, "Authorization", auth)
			stop()
			wantWalk(t, walked, stable)
			wantOrder(t, walked, func(a, b string) bool { return a < b })
		})
		t.Run("case history", func(t *testing.T) {
			auth := h.bearer("acme", "cases:read", "cases:write")
			rec := h.do("POST", "/v1/cases", caseBody(time.Now().Add(time.Hour)), "Authorization", auth)
			wantStatus(t, rec, http.StatusCreated)
			var c caseJSON
			decode(t, rec, &c)
			path := "/v1/cases/" + c.CaseId
			stable := []string{"1"}
			for i := range 19 {
				wantStatus(t, h.do("POST", path+"/assign", map[string]any{"assignedTeam": fmt.Sprintf("team-%d", i)}, "Authorization", auth), http.StatusOK)
				stable = append(stable, fmt.Sprint(i+2))
			}
			// 20 entries before, at most 8×8 during: within the history's 100, nothing trimmed.
			stop := concurrently(walkWriters, 8, func(w, i int) {
				if rec := h.do("POST", path+"/assign", map[string]any{"assignedTeam": fmt.Sprintf("w-%d-%d", w, i)}, "Authorization", auth); rec.Code != http.StatusOK {
					t.Errorf("writer assign: %d %s", rec.Code, rec.Body)
				}
			})
			defer stop()
			walked := walkPages(t, h, path+"/history?limit=3", []string{"stateVersion"}, pause, "Authorization", auth)
			stop()
			wantWalk(t, walked, stable)
			wantOrder(t, walked, func(a, b string) bool { // stateVersion descending
				va, _ := strconv.Atoi(a)
				vb, _ := strconv.Atoi(b)
				return va > vb
			})
		})
	})
}
