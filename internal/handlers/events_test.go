package handlers

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestEventsListPagesFiltersAndScope: GET /v1/events pages the tenant's events oldest first
// with a cursor, filters by type and subject, needs events:read, shows another tenant nothing;
// neither the answer nor anything stored in Redis holds an issued token.
func TestEventsListPagesFiltersAndScope(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		h := newHarnessOn(t, s, prefix, nil, nil)
		admin := h.bearer("acme", auth.ScopeTokensWrite, auth.ScopeTokensRead, auth.ScopeEventsRead)
		var issued []TokenIssued
		for range 3 {
			issued = append(issued, mustIssueToken(t, h, admin, tokenRequest(600, "tokens:read")))
		}
		if rec := h.do("DELETE", "/v1/tokens/"+issued[1].TokenId, nil, "Authorization", admin); rec.Code != 204 {
			t.Fatalf("revoke: %d %s", rec.Code, rec.Body)
		}
		var all []Event
		cursor := ""
		for pages := 0; ; pages++ {
			rec := h.do("GET", "/v1/events?limit=2"+cursor, nil, "Authorization", admin)
			if rec.Code != 200 {
				t.Fatalf("list: %d %s", rec.Code, rec.Body)
			}
			for _, tok := range issued {
				if strings.Contains(rec.Body.String(), tok.Token) {
					t.Fatal("an event holds an issued token")
				}
			}
			var page EventPage
			decode(t, rec, &page)
			all = append(all, page.Items...)
			if page.NextCursor == nil {
				break
			}
			if pages > 5 || len(page.Items) != 2 {
				t.Fatalf("page %d: %d items, next %v", pages, len(page.Items), *page.NextCursor)
			}
			cursor = "&cursor=" + *page.NextCursor
		}
		// The admin bearer's own token (minted by the harness) comes first.
		if len(all) != 5 {
			t.Fatalf("%d events, want 5: %+v", len(all), all)
		}
		last := all[len(all)-1]
		if last.Type != "token.revoked" || last.Subject != issued[1].TokenId || last.TenantId != "acme" ||
			!strings.HasPrefix(last.Actor, "token:") || last.RequestId == nil || *last.RequestId == "" {
			t.Fatalf("last event %+v", last)
		}
		for i := 1; i < len(all); i++ {
			if all[i].Id <= all[i-1].Id && len(all[i].Id) == len(all[i-1].Id) {
				t.Fatalf("events out of order: %s then %s", all[i-1].Id, all[i].Id)
			}
		}
		var page EventPage
		decode(t, h.do("GET", "/v1/events?type=token.revoked", nil, "Authorization", admin), &page)
		if len(page.Items) != 1 || page.Items[0].Subject != issued[1].TokenId {
			t.Fatalf("type filter: %+v", page.Items)
		}
		decode(t, h.do("GET", "/v1/events?subject="+issued[2].TokenId, nil, "Authorization", admin), &page)
		if len(page.Items) != 1 || page.Items[0].Type != "token.issued" {
			t.Fatalf("subject filter: %+v", page.Items)
		}
		wantProblem(t, h.do("GET", "/v1/events", nil, "Authorization", h.bearer("acme", auth.ScopeTokensRead)), 403, "insufficient-scope")
		wantProblem(t, h.do("GET", "/v1/events?type=token.nope", nil, "Authorization", admin), 400, "validation")
		decode(t, h.do("GET", "/v1/events", nil, "Authorization", h.bearer("globex", auth.ScopeEventsRead)), &page)
		if len(page.Items) != 1 { // globex's own bearer only
			t.Fatalf("another tenant sees %d events", len(page.Items))
		}
		// No issued token anywhere in Redis under the test prefix.
		ctx := context.Background()
		for _, n := range s.Client.Nodes() {
			keys, err := n.Do(ctx, n.B().Keys().Pattern(prefix+":v1:events:*").Build()).AsStrSlice()
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				entries, _ := n.Do(ctx, n.B().Xrange().Key(k).Start("-").End("+").Build()).AsXRange()
				for _, e := range entries {
					for f, v := range e.FieldValues {
						for _, tok := range issued {
							if strings.Contains(v, tok.Token) || strings.Contains(v, strings.Split(tok.Token, ".")[2]) {
								t.Fatalf("stream %s field %s holds an issued token", k, f)
							}
						}
					}
				}
			}
		}
	})
}

// sseEvent is one event read from a text/event-stream.
type sseEvent struct{ id, typ, data string }

// readSSE reads events (and comments, as typ ":") from r into out until r ends.
func readSSE(r *bufio.Reader, out chan<- sseEvent) {
	defer close(out)
	var ev sseEvent
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			if ev.typ != "" {
				out <- ev
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"):
			ev.typ = ":"
			ev.data = line
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.typ = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[6:]
		}
	}
}

func openSSE(t *testing.T, url, bearer, last string) (<-chan sseEvent, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/v1/events/stream", nil)
	req.Header.Set("Authorization", bearer)
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan sseEvent, 64)
	go readSSE(bufio.NewReader(resp.Body), out)
	return out, func() { cancel(); resp.Body.Close() }
}

// nextEvent is the next event of ch that is not a comment.
func nextEvent(t *testing.T, ch <-chan sseEvent) sseEvent {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("the stream ended")
			}
			if ev.typ != ":" {
				return ev
			}
		case <-deadline:
			t.Fatal("no event within 5 s")
		}
	}
}

// TestEventStreamResumesFromLastEventID: the SSE stream starts with the events written from
// now on, sends keep-alive comments, resumes after Last-Event-ID with exactly the events
// missed (in order, none twice), and ends with a shutdown event when the gateway stops.
func TestEventStreamResumesFromLastEventID(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		h := newHarnessOn(t, s, prefix, nil, func(h *harness, d *Deps) {
			d.EventStream = EventStreamOptions{KeepAlive: 100 * time.Millisecond, MaxDuration: time.Minute}
		})
		srv := httptest.NewServer(h.e)
		defer srv.Close()
		admin := h.bearer("acme", auth.ScopeTokensWrite, auth.ScopeTokensRead, auth.ScopeEventsRead)
		before := mustIssueToken(t, h, admin, tokenRequest(600, "tokens:read"))
		ch, stop := openSSE(t, srv.URL, admin, "")
		keepAlive := false
		for !keepAlive {
			select {
			case ev := <-ch:
				keepAlive = ev.typ == ":" && strings.Contains(ev.data, "keep-alive")
			case <-time.After(5 * time.Second):
				t.Fatal("no keep-alive")
			}
		}
		first := mustIssueToken(t, h, admin, tokenRequest(600, "tokens:read"))
		ev := nextEvent(t, ch)
		if ev.typ != "token.issued" || !strings.Contains(ev.data, first.TokenId) || strings.Contains(ev.data, before.TokenId) || ev.id == "" {
			t.Fatalf("first event %+v (the stream starts after the events already written)", ev)
		}
		stop()
		var missed []string
		for range 3 {
			missed = append(missed, mustIssueToken(t, h, admin, tokenRequest(600, "tokens:read")).TokenId)
		}
		ch, stop = openSSE(t, srv.URL, admin, ev.id)
		defer stop()
		for i, id := range missed {
			got := nextEvent(t, ch)
			if !strings.Contains(got.data, fmt.Sprintf(`"subject":%q`, id)) {
				t.Fatalf("resumed event %d: %+v, want the token %s", i, got, id)
			}
		}
		h.srv.CloseStreams()
		if got := nextEvent(t, ch); got.typ != "shutdown" {
			t.Fatalf("after CloseStreams: %+v", got)
		}
		select {
		case _, ok := <-ch:
			for ok {
				_, ok = <-ch
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the stream did not end on shutdown")
		}
	})
}
