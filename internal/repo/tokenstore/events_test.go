package tokenstore

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

func streamLen(t *testing.T, s *store.Store, key string) int64 {
	t.Helper()
	n, err := s.Client.Do(context.Background(), s.Client.B().Xlen().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatalf("XLEN %s: %v", key, err)
	}
	return n
}

// TestTokenEventsIffTheChange: a create and a cascading revocation append token.issued and one
// token.revoked per token revoked, in the tenant's stream, with the request's origin; a refused
// create, an unknown id and a second revocation append nothing; the stream has the max age as
// its TTL.
func TestTokenEventsIffTheChange(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := events.WithOrigin(context.Background(), events.Origin{Actor: "token:T0", RequestID: "req-1"})
		r := newStore(t, s, prefix, time.Minute, 0)
		key := r.Keys.EventStream(r.tag("acme"))
		now := time.Now()
		a := newToken("acme", now, time.Hour)
		b := newToken("acme", now, time.Minute)
		b.ParentID = a.ID
		for _, x := range []tokens.Token{a, b} {
			if err := r.Create(ctx, x); err != nil {
				t.Fatal(err)
			}
		}
		// Refused: the issuer would be outlived; the id exists; expired.
		c := newToken("acme", now, 2*time.Hour)
		c.ParentID = a.ID
		if err := r.Create(ctx, c); !errors.Is(err, tokens.ErrOutlivesIssuer) {
			t.Fatalf("outliving child: %v", err)
		}
		if err := r.Create(ctx, a); !errors.Is(err, tokens.ErrExists) {
			t.Fatalf("same id: %v", err)
		}
		if n := streamLen(t, s, key); n != 2 {
			t.Fatalf("%d events after two creates and two refusals, want 2", n)
		}
		if res, _, err := r.Revoke(ctx, "acme", a.ID, "done"); err != nil || res != tokens.Revoked {
			t.Fatalf("revoke: %v %v", res, err)
		}
		for _, id := range []string{a.ID, "01JUNKNOWN0000000000000000"} {
			if _, _, err := r.Revoke(ctx, "acme", id, "again"); err != nil {
				t.Fatal(err)
			}
		}
		got := storetest.Events(t, s, key)
		want := []struct {
			typ     events.Type
			subject string
		}{{events.TokenIssued, a.ID}, {events.TokenIssued, b.ID}, {events.TokenRevoked, a.ID}, {events.TokenRevoked, b.ID}}
		if len(got) != len(want) {
			t.Fatalf("%d events, want %d: %+v", len(got), len(want), got)
		}
		for i, w := range want {
			e := got[i]
			if e.Type != w.typ || e.Subject != w.subject || e.Tenant != "acme" || e.Actor != "token:T0" || e.RequestID != "req-1" {
				t.Fatalf("event %d = %+v, want %s of %s", i, e, w.typ, w.subject)
			}
			if d := time.Since(e.Time); d < -time.Second || d > time.Minute {
				t.Fatalf("event %d time %v", i, e.Time)
			}
		}
		var issued, cascade map[string]any
		if json.Unmarshal(got[1].Data, &issued) != nil || issued["parentId"] != a.ID || issued["tokenType"] != "service" {
			t.Fatalf("token.issued data %s", got[1].Data)
		}
		if json.Unmarshal(got[3].Data, &cascade) != nil || cascade["cascadeFrom"] != a.ID {
			t.Fatalf("cascaded token.revoked data %s", got[3].Data)
		}
		if d := tokenPTTL(t, s, key); d < events.DefaultMaxAge-time.Minute || d > events.DefaultMaxAge {
			t.Fatalf("stream TTL %v, want about %v", d, events.DefaultMaxAge)
		}
	})
}

// TestTokenEventsRetention: the stream keeps about MaxLen entries (MAXLEN ~) however many
// tokens are issued.
func TestTokenEventsRetention(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		h := newStore(t, s, prefix, time.Minute, 0)
		r, err := New(s, Options{Prefix: prefix, Hasher: h.Hasher, Retention: events.Retention{MaxAge: time.Hour, MaxLen: 100}})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		for range 400 {
			if err := r.Create(ctx, newToken("acme", now, time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		if n := streamLen(t, s, r.Keys.EventStream(r.tag("acme"))); n < 100 || n > 200 {
			t.Fatalf("stream holds %d entries after 400 appends with MAXLEN ~ 100", n)
		}
	})
}
