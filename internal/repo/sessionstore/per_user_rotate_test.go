package sessionstore

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// In the per-user layout a rotation moves every "<old>:<name>" field of the session to
// "<new>:<name>" with its own TTL (the challenge's shorter one included), writes lastRotatedAtMs
// and updatedAtMs, and leaves nothing under the old id part; the user's fields and the other
// sessions are untouched. Another tenant's or a missing session is NOT_FOUND, a taken new id
// EXISTS, neither writing anything.
func TestSessionRotatePerUserMovesFields(t *testing.T) {
	t.Parallel()
	eachPerUser(t, func(t *testing.T, _ testredis.Backend, s *store.Store, e *sessEnv) {
		ctx := context.Background()
		tag := sessRand(t, 9)
		ref := e.create(tag, "acme", "alice", time.Hour, 3*time.Hour)
		other := e.create(tag, "acme", "alice", 10*time.Minute, 2*time.Hour)
		e.challenge(ref, "acme", sessRand(t, 16), "mac", time.Minute)
		if res, _, err := e.verify(ref, "acme", "no-such-challenge", "mac"); err != nil || res.Outcome != session.VerifyNoChallenge {
			t.Fatalf("verify: %+v %v", res, err)
		}
		time.Sleep(5 * time.Millisecond) // a rotation instant after the writes above
		key := e.r.userKey(tag)
		all := func() map[string]string {
			m, err := e.do(s.Client.B().Hgetall().Key(key).Build()).AsStrMap()
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		before := e.sessStored(ref)
		beforeTTL := map[string]int64{}
		for n := range before {
			beforeTTL[n] = e.fieldTTLs(key, partField(ref.Part, n))[0]
		}
		if beforeTTL[fieldChallengeID] > 60_000 || beforeTTL[fieldAbsoluteExpires] < 59*60_000 {
			t.Fatalf("TTLs before: %v", beforeTTL)
		}
		otherBefore := e.sessStored(other)

		// Refusals write nothing.
		whole := all()
		next := session.Ref{Tag: tag, Part: sessPart(t)}
		if _, err := e.r.Rotate(ctx, ref, "globex", next); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("another tenant: %v", err)
		}
		if _, err := e.r.Rotate(ctx, session.Ref{Tag: tag, Part: sessPart(t)}, "acme", next); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("missing session: %v", err)
		}
		if _, err := e.r.Rotate(ctx, ref, "acme", other); !errors.Is(err, repo.ErrExists) {
			t.Fatalf("onto a live session's id: %v", err)
		}
		if got := all(); !maps.Equal(got, whole) {
			t.Fatalf("a refused rotation wrote:\n%v\n%v", whole, got)
		}

		got, err := e.r.Rotate(ctx, ref, "acme", next)
		if err != nil || got.Ref != next || got.Status != session.MFARequired || got.AuthLevel != session.LevelBasic {
			t.Fatalf("rotate: %+v %v", got, err)
		}
		if got.CreatedAt.IsZero() || got.CreatedAt.UnixMilli() != sessAtoi(all()[fieldCreatedAt]) {
			t.Fatalf("createdAt %v, want the hash's %s (the session holds none of its own)", got.CreatedAt, all()[fieldCreatedAt])
		}
		if got.AbsoluteExpiresAt.UnixMilli() != sessAtoi(before[fieldAbsoluteExpires]) {
			t.Fatalf("absolute deadline %v, want %s", got.AbsoluteExpiresAt, before[fieldAbsoluteExpires])
		}
		if d := time.Until(got.IdleExpiresAt); d < 59*time.Minute || d > time.Hour {
			t.Fatalf("idle deadline in %v, want the hour kept", d)
		}
		if st := e.sessStored(ref); len(st) != 0 {
			t.Fatalf("fields left under the old id part: %v", st)
		}
		after := e.sessStored(next)
		for n, v := range before {
			if n != fieldLastRotatedAt && n != fieldUpdatedAt && after[n] != v {
				t.Fatalf("field %s: %q after the rotation, %q before", n, after[n], v)
			}
		}
		if after[fieldLastRotatedAt] != after[fieldUpdatedAt] || sessAtoi(after[fieldLastRotatedAt]) != got.LastRotatedAt.UnixMilli() ||
			sessAtoi(after[fieldLastRotatedAt]) <= sessAtoi(before[fieldUpdatedAt]) {
			t.Fatalf("lastRotatedAtMs %s, updatedAtMs %s (before %s), reply %v", after[fieldLastRotatedAt], after[fieldUpdatedAt], before[fieldUpdatedAt], got.LastRotatedAt)
		}
		if len(after) != len(before)+1 { // + lastRotatedAtMs
			t.Fatalf("fields after %v, before %v", after, before)
		}
		const slack = 5000
		for n := range after {
			ttl := e.fieldTTLs(key, partField(next.Part, n))[0]
			want, ok := beforeTTL[n]
			if !ok {
				want = beforeTTL[fieldAbsoluteExpires]
			}
			if ttl > want || ttl < want-slack {
				t.Fatalf("field %s: TTL %d ms after the rotation, %d ms before", n, ttl, want)
			}
		}
		if !e.challengeLive(next) {
			t.Fatal("the challenge did not follow the rotation")
		}
		if got := e.sessStored(other); !maps.Equal(got, otherBefore) {
			t.Fatalf("another session changed: %v → %v", otherBefore, got)
		}
		if p := e.pttl(key); p < (3*time.Hour).Milliseconds()-10_000 {
			t.Fatalf("key TTL %d ms, want the latest deadline (3h)", p)
		}
		e.everyKeyHasTTL()
	})
}
