package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/testredis"
)

// webhookHarnesses runs fn on a harness per backend whose webhooks may call a local receiver
// (answering 200), at rcv.
func webhookHarnesses(t *testing.T, fn func(t *testing.T, h *harness, rcv string)) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	t.Cleanup(srv.Close)
	for _, b := range testredis.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			s := testredis.Open(t, b)
			h := newHarnessWith(t, s, TestGateway{Prefix: testredis.Prefix(t), Config: func(c *config.Config) { c.WebhookAllowPrivate = true }}, nil)
			fn(t, h, srv.URL+"/hook")
		})
	}
}

// mustCreate POSTs body to path and answers the created object's field.
func mustCreate(t *testing.T, h *harness, path string, body any, field string, headers ...string) string {
	t.Helper()
	rec := h.do("POST", path, body, headers...)
	if rec.Code != http.StatusCreated && rec.Code != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, rec.Code, rec.Body)
	}
	var m map[string]any
	decode(t, rec, &m)
	v, _ := m[field].(string)
	return v
}

// The webhooks, a webhook's deliveries and the events page like every list: following Link
// walks each while writers add (and remove) entries, no entry twice, none of those there
// before the walk skipped, each in its list's order.
func TestWebhookAndEventListsWalkPages(t *testing.T) {
	t.Parallel()
	pause := func() { time.Sleep(3 * time.Millisecond) }
	webhookHarnesses(t, func(t *testing.T, h *harness, rcv string) {
		auth := h.bearer("acme", "webhooks:read", "webhooks:write", "events:read", "tokens:read", "tokens:write")
		hook := map[string]any{"url": rcv, "events": []string{"*"}}
		t.Run("webhooks", func(t *testing.T) {
			var stable []string
			for range 12 { // of the default quota of 20: the 8 writers' stay within it
				stable = append(stable, mustCreate(t, h, "/v1/webhooks", hook, "webhookId", "Authorization", auth))
			}
			stop := concurrently(walkWriters, 5, func(_, _ int) {
				rec := h.do("POST", "/v1/webhooks", hook, "Authorization", auth)
				var w webhookBody
				if rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &w) != nil {
					t.Errorf("writer create: %d %s", rec.Code, rec.Body)
					return
				}
				if rec := h.do("DELETE", "/v1/webhooks/"+w.WebhookID, nil, "Authorization", auth); rec.Code != http.StatusNoContent {
					t.Errorf("writer delete: %d %s", rec.Code, rec.Body)
				}
			})
			defer stop()
			wantPaged(t, h, "/v1/webhooks?limit=3", 3, "Authorization", auth)
			walked := walkPages(t, h, "/v1/webhooks?limit=3", []string{"createdAt", "webhookId"}, pause, "Authorization", auth)
			stop()
			wantOrder(t, walked, func(a, b string) bool { return a < b }) // oldest first, then by id
			wantWalk(t, lastWords(walked), stable)
		})
		t.Run("deliveries", func(t *testing.T) {
			id := mustCreate(t, h, "/v1/webhooks", hook, "webhookId", "Authorization", auth)
			path := "/v1/webhooks/" + id
			var stable []string
			for range 20 {
				stable = append(stable, mustCreate(t, h, path+"/ping", nil, "messageId", "Authorization", auth))
			}
			// 20 records before, 8×8 during: within the 100 kept, nothing trimmed.
			stop := concurrently(walkWriters, 8, func(_, _ int) {
				if rec := h.do("POST", path+"/ping", nil, "Authorization", auth); rec.Code != http.StatusOK {
					t.Errorf("writer ping: %d %s", rec.Code, rec.Body)
				}
			})
			defer stop()
			wantPaged(t, h, path+"/deliveries?limit=3", 3, "Authorization", auth)
			walked := walkPages(t, h, path+"/deliveries?limit=3", []string{"updatedAt", "messageId"}, pause, "Authorization", auth)
			stop()
			wantOrder(t, walked, func(a, b string) bool { return a > b }) // newest first, then by id
			wantWalk(t, lastWords(walked), stable)
		})
		t.Run("events", func(t *testing.T) {
			for range 12 {
				mustIssueToken(t, h, auth, tokenRequest(600, "tokens:read"))
			}
			var before listPage
			decode(t, h.do("GET", "/v1/events?type=token.issued&limit=100", nil, "Authorization", auth), &before)
			if len(before.Items) < 12 {
				t.Fatalf("%d token.issued events before the walk", len(before.Items))
			}
			var stable []string
			for _, it := range before.Items {
				stable = append(stable, strings.Trim(string(it["id"]), `"`))
			}
			stop := concurrently(walkWriters, 5, func(_, _ int) {
				if rec := h.do("POST", "/v1/tokens", tokenRequest(600, "tokens:read"), "Authorization", auth); rec.Code != http.StatusCreated {
					t.Errorf("writer issue: %d %s", rec.Code, rec.Body)
				}
			})
			defer stop()
			wantPaged(t, h, "/v1/events?type=token.issued&limit=3", 3, "Authorization", auth)
			walked := walkPages(t, h, "/v1/events?type=token.issued&limit=3", []string{"type", "id"}, pause, "Authorization", auth)
			stop()
			for _, w := range walked {
				if !strings.HasPrefix(w, "token.issued ") {
					t.Fatalf("the Link lost the filter: %v", walked)
				}
			}
			walked = lastWords(walked)
			wantOrder(t, walked, func(a, b string) bool { return eventIDLess(a, b) }) // oldest first
			wantWalk(t, walked, stable)
		})
	})
}

// wantPaged checks that the first page of target holds limit entries and names a next page.
func wantPaged(t *testing.T, h *harness, target string, limit int, headers ...string) {
	t.Helper()
	rec := h.do("GET", target, nil, headers...)
	var p listPage
	decode(t, rec, &p)
	if rec.Code != http.StatusOK || len(p.Items) != limit || p.NextCursor == nil || rec.Header().Get("Link") == "" {
		t.Fatalf("GET %s: %d, %d entries, next %v, Link %q", target, rec.Code, len(p.Items), p.NextCursor, rec.Header().Get("Link"))
	}
}

// eventIDLess orders stream ids ("<ms>-<seq>") as Redis does.
func eventIDLess(a, b string) bool {
	var am, as, bm, bs uint64
	fmt.Sscanf(a, "%d-%d", &am, &as)
	fmt.Sscanf(b, "%d-%d", &bm, &bs)
	return am < bm || am == bm && as < bs
}

// A cursor is its list's: the webhooks' cursor of another tenant, the deliveries' cursor of
// another webhook, the events' cursor of other filters, and a cursor this gateway never
// made, are a 400 naming `cursor`; an event id is an events cursor of its own.
func TestWebhookAndEventCursorsOfAnotherListRefused(t *testing.T) {
	t.Parallel()
	webhookHarnesses(t, func(t *testing.T, h *harness, rcv string) {
		acme := h.bearer("acme", "webhooks:read", "webhooks:write", "events:read", "tokens:read", "tokens:write")
		globex := h.bearer("globex", "webhooks:read", "webhooks:write")
		hook := map[string]any{"url": rcv, "events": []string{"*"}}
		var hooks []string
		for range 2 {
			id := mustCreate(t, h, "/v1/webhooks", hook, "webhookId", "Authorization", acme)
			mustCreate(t, h, "/v1/webhooks", hook, "webhookId", "Authorization", globex)
			for range 2 {
				mustCreate(t, h, "/v1/webhooks/"+id+"/ping", nil, "messageId", "Authorization", acme)
			}
			hooks = append(hooks, "/v1/webhooks/"+id+"/deliveries")
			mustIssueToken(t, h, acme, tokenRequest(600, "tokens:read"))
		}
		for _, tc := range []struct{ name, from, to, bearer string }{
			{"webhooks", "/v1/webhooks?limit=1", "/v1/webhooks?limit=1", globex},
			{"deliveries", hooks[0] + "?limit=1", hooks[1] + "?limit=1", acme},
			{"events", "/v1/events?limit=1", "/v1/events?type=token.issued&limit=1", acme},
		} {
			from := acme
			rec := h.do("GET", tc.from, nil, "Authorization", from)
			var p listPage
			decode(t, rec, &p)
			if rec.Code != http.StatusOK || p.NextCursor == nil {
				t.Fatalf("%s: %d %s", tc.name, rec.Code, rec.Body)
			}
			for _, bad := range []string{*p.NextCursor, "AAAAAAAAAAAA", "x"} {
				pr := wantProblem(t, h.do("GET", tc.to+"&cursor="+bad, nil, "Authorization", tc.bearer), 400, "validation")
				if len(pr.Errors) != 1 || pr.Errors[0].Parameter != "query:cursor" {
					t.Fatalf("%s, cursor %s: %+v", tc.name, bad, pr)
				}
			}
			if rec := h.do("GET", tc.from+"&cursor="+*p.NextCursor, nil, "Authorization", from); rec.Code != http.StatusOK {
				t.Fatalf("%s: own cursor: %d %s", tc.name, rec.Code, rec.Body)
			}
		}
		var first listPage
		decode(t, h.do("GET", "/v1/events?limit=1", nil, "Authorization", acme), &first)
		id := strings.Trim(string(first.Items[0]["id"]), `"`)
		var after listPage
		decode(t, h.do("GET", "/v1/events?limit=1&cursor="+id, nil, "Authorization", acme), &after)
		if len(after.Items) != 1 || !eventIDLess(id, strings.Trim(string(after.Items[0]["id"]), `"`)) {
			t.Fatalf("events after %s: %+v", id, after)
		}
	})
}
