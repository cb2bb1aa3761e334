package sessionstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// outboxEvents reads the user's pending events: the outbox stream (per session), or the event
// fields of the user's hash in their order (per user).
func (e *sessEnv) outboxEvents(tag string) []events.Event {
	e.t.Helper()
	if key := e.r.layout.outboxKey(tag); key != "" {
		return storetest.Events(e.t, e.s, key)
	}
	all, err := e.do(e.s.Client.B().Hgetall().Key(e.r.userKey(tag)).Build()).AsStrMap()
	if err != nil {
		e.t.Fatal(err)
	}
	var nums []int64
	for f := range all {
		if rest, ok := strings.CutPrefix(f, "ev."); ok {
			n, err := strconv.ParseInt(rest, 10, 64)
			if err != nil {
				e.t.Fatalf("event field %q", f)
			}
			nums = append(nums, n)
		}
	}
	slices.Sort(nums)
	out := make([]events.Event, 0, len(nums))
	for _, n := range nums {
		ev, err := fromOutbox(n, all["ev."+strconv.FormatInt(n, 10)])
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

func eventTypes(evs []events.Event) []events.Type {
	out := make([]events.Type, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

// TestSessionEventsIffTheChange: every session write appends its event to the user's outbox
// in the same script, in every layout: create, challenge, a wrong code (and the lock when it
// uses the window's last attempt), verify, rotate, eviction at the cap, revoke by a service,
// logout by the session itself, revoke-all; refused writes (another tenant's session, a
// locked verify, an unknown session) append nothing. With the ends only
// (GATEWAY_SESSION_EVENTS=ends, the default) the same writes append only the eviction, the
// revocations and the logout.
func TestSessionEventsIffTheChange(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, e *sessEnv) {
		for _, set := range []events.SessionEvents{events.SessionEventsAll, events.SessionEventsEnds} {
			e.r.o.Outbox = set
			checkSessionEvents(t, e, set)
		}
	})
}

// checkSessionEvents runs TestSessionEventsIffTheChange's writes with the set of session
// events written.
func checkSessionEvents(t *testing.T, e *sessEnv, set events.SessionEvents) {
	svc := events.WithOrigin(context.Background(), events.Origin{Actor: "token:T1", RequestID: "r-1"})
	tag := sessRand(t, 9)
	a := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
	e.lockOut(svc, a)
	before := len(e.outboxEvents(tag))
	// Refused: locked, another tenant's, unknown.
	if res, _ := e.r.Verify(svc, session.MFAVerification{Ref: a, Tenant: "acme", ChallengeID: "c1", CodeMAC: "good", VerifierMAC: testMAC}); res != nil && res.Outcome == session.VerifyOK {
		t.Fatal("a verify past the limit passed")
	}
	if _, err := e.r.Rotate(svc, a, "globex", testMAC); err == nil {
		t.Fatal("another tenant's rotation passed")
	}
	if ok, _ := e.r.Revoke(svc, session.Ref{Tag: tag, Part: sessRand(t, 18)[:18]}, "acme"); ok {
		t.Fatal("an unknown session was revoked")
	}
	if n := len(e.outboxEvents(tag)); n != before {
		t.Fatalf("refused writes appended %d events", n-before)
	}
	if _, err := e.r.Rotate(svc, a, "acme", testMAC); err != nil {
		t.Fatal(err)
	}
	b := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
	c := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
	d := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour) // the cap is 3: evicts one
	if ok, err := e.r.Revoke(svc, b, "acme"); err != nil || !ok {
		// b may be the evicted one (least recently used): revoke c instead
		if ok, err = e.r.Revoke(svc, c, "acme"); err != nil || !ok {
			t.Fatalf("revoke: %v %v", ok, err)
		}
	}
	self := events.WithOrigin(context.Background(), events.Origin{Actor: events.SessionActor(d.ID())})
	if ok, err := e.r.Revoke(self, d, "acme"); err != nil || !ok {
		t.Fatalf("logout: %v %v", ok, err)
	}
	e2 := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
	if _, err := e.r.RevokeAll(svc, tag, ""); err != nil {
		t.Fatal(err)
	}
	got := e.outboxEvents(tag)
	want := []events.Type{events.SessionCreated, events.SessionMFAChallenged}
	for range e.r.o.MFA.Limit {
		want = append(want, events.SessionMFAFailed)
	}
	want = append(want, events.SessionMFALocked, events.SessionRotated, events.SessionCreated, events.SessionCreated,
		events.SessionEvicted, events.SessionCreated, events.SessionRevoked, events.SessionLoggedOut, events.SessionCreated)
	want = slices.DeleteFunc(want, func(typ events.Type) bool { return !set.Writes(typ) })
	// revoke-all: the live sessions left (a, and one of b, c, e2 when not evicted), one event each
	if len(got) < len(want) || !slices.Equal(eventTypes(got)[:len(want)], want) {
		t.Fatalf("session events %s: events %v\nwant %v...", set, eventTypes(got), want)
	}
	for _, ev := range got[len(want):] {
		var data map[string]any
		if ev.Type != events.SessionRevoked || json.Unmarshal(ev.Data, &data) != nil || data["reason"] != "revoke_all" || ev.Tenant != "acme" {
			t.Fatalf("after revoke-all: %+v %s", ev, ev.Data)
		}
	}
	if len(got) == len(want) {
		t.Fatal("revoke-all appended no event")
	}
	for _, ev := range got {
		if ev.Tenant != "acme" || len(ev.Subject) != len(a.ID()) || ev.Subject[:2+len(tag)] != "s_"+tag {
			t.Fatalf("event %+v", ev)
		}
		if ev.Type == events.SessionLoggedOut && (ev.Subject != d.ID() || ev.Actor != "session:"+d.ID()) {
			t.Fatalf("logout event %+v", ev)
		}
		if ev.Type == events.SessionRotated && (ev.Subject != a.ID() || ev.Actor != "token:T1" || ev.RequestID != "r-1") {
			t.Fatalf("rotation event %+v", ev)
		}
	}
	_ = e2
	e.everyKeyHasTTL()
}

// fromOutbox decodes event number n of a user's session hash.
func fromOutbox(n int64, v string) (events.Event, error) {
	f, ok := events.OutboxFields(v)
	if !ok {
		return events.Event{}, fmt.Errorf("outbox event %d: malformed", n)
	}
	return events.FromEntry(events.OutboxID(n), f)
}
