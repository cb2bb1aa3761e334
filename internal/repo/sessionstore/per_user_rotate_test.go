package sessionstore

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// In the per-user layout a rotation keeps the session's id part: it replaces
// the verifier MAC in "<idPart>:live" and writes lastRotatedAtMs and updatedAtMs, with the session's field
// TTL; every other field keeps its value and its own TTL (the challenge's shorter one
// included); the other sessions are untouched. Another tenant's or a missing session is
// NOT_FOUND, writing nothing.
func TestSessionRotatePerUserReplacesVerifier(t *testing.T) {
	t.Parallel()
	eachPerUser(t, func(t *testing.T, _ testredis.Backend, s *store.Store, e *sessEnv) {
		ctx := context.Background()
		tag := sessRand(t, 9)
		ref := e.create(tag, "acme", "alice", time.Hour, 3*time.Hour)
		other := e.create(tag, "acme", "alice", 10*time.Minute, 2*time.Hour)
		e.challenge(ref, "acme", sessRand(t, 16), "mac", time.Minute)
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
			beforeTTL[n] = e.fieldTTLs(key, e.sessField(ref, n))[0]
		}
		otherBefore := e.sessStored(other)

		// Refusals write nothing.
		whole := all()
		if _, err := e.r.Rotate(ctx, ref, "globex", macOf("x")); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("another tenant: %v", err)
		}
		if _, err := e.r.Rotate(ctx, session.Ref{Tag: tag, Part: sessPart(t)}, "acme", macOf("x")); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("missing session: %v", err)
		}
		if got := all(); !maps.Equal(got, whole) {
			t.Fatalf("a refused rotation wrote:\n%v\n%v", whole, got)
		}

		got, err := e.r.Rotate(ctx, ref, "acme", macOf("rotated"))
		if err != nil || got.Ref != ref || got.Status != session.MFARequired || got.AuthLevel != session.LevelBasic {
			t.Fatalf("rotate: %+v %v", got, err)
		}
		if got.AbsoluteExpiresAt.UnixMilli() != sessAtoi(before[fieldAbsoluteExpires]) || got.CreatedAt.UnixMilli() != sessAtoi(before[fieldCreatedAt]) {
			t.Fatalf("absolute deadline %v, createdAt %v; want %s, %s (the marker's)", got.AbsoluteExpiresAt, got.CreatedAt,
				before[fieldAbsoluteExpires], before[fieldCreatedAt])
		}
		if d := time.Until(got.IdleExpiresAt); d < 59*time.Minute || d > time.Hour {
			t.Fatalf("idle deadline in %v, want the hour kept", d)
		}
		after := e.sessStored(ref)
		written := map[string]bool{fieldVerifierMAC: true, fieldLastRotatedAt: true, fieldUpdatedAt: true}
		for n, v := range before {
			if !written[n] && after[n] != v {
				t.Fatalf("field %s: %q after the rotation, %q before", n, after[n], v)
			}
		}
		if after[fieldVerifierMAC] != macOf("rotated") || after[fieldLastRotatedAt] != after[fieldUpdatedAt] ||
			sessAtoi(after[fieldLastRotatedAt]) != got.LastRotatedAt.UnixMilli() {
			t.Fatalf("after the rotation: %v (reply %v)", after, got.LastRotatedAt)
		}
		const slack = 5000
		for n := range after {
			ttl := e.fieldTTLs(key, e.sessField(ref, n))[0]
			want, ok := beforeTTL[n]
			if !ok || written[n] {
				want = beforeTTL[fieldAbsoluteExpires]
			}
			if ttl > want || ttl < want-slack {
				t.Fatalf("field %s: TTL %d ms after the rotation, %d ms before", n, ttl, want)
			}
		}
		if !e.challengeLive(ref) {
			t.Fatal("the challenge did not survive the rotation")
		}
		if got := e.sessStored(other); !maps.Equal(got, otherBefore) {
			t.Fatalf("another session changed: %v → %v", otherBefore, got)
		}
		e.everyKeyHasTTL()
	})
}
