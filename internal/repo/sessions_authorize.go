package repo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// sessAuthFields are what Authorize reads with one HMGET (never HGETALL): the authorization
// fields, what expiry needs, and the view fields "who am I" answers with — never the code MAC
// or the device hashes. The first seven are in the order session_authorize.lua expects.
var sessAuthFields = []string{sfUserID, sfTenantID, sfStatus, sfAuthLevel, sfAbsoluteExpires,
	sfIdleTimeout, sfSchemaVersion, sfLastSeenAt, sfCreatedAt, sfUpdatedAt, sfLastRotatedAt, sfMFAVerifiedAt,
	sfDeviceLabel, sfFailedMFA, sfChallengeID, sfChallengeAt, sfLoginPending}

// sessAuthKeyFields is how many of sessAuthFields decide whether the session exists.
const sessAuthKeyFields = 7

// AuthContext is what the hot path learns: the session's view (who, which tenant, which level,
// until when, and what "who am I" shows) and how it was read.
type AuthContext struct {
	session.Session
	// Refreshed is true when this call slid the idle window.
	Refreshed bool
	// CacheHit is true when the fields came from the client-side cache (no round trip).
	CacheHit bool
	Outcome  Outcome
}

// Authorize is the hot path. It reads the session's authorization and view fields (one HMGET,
// never HGETALL) and slides the idle window only when less than
// RefreshFraction of it is left, never past the absolute deadline.
//
// Without the client-side cache that is one script: one round trip. With it, the HMGET goes
// through rueidis' cache and the decision is made here: a hash past its absolute deadline, or
// past the end of its idle window (lastSeenAtMs — createdAtMs before the first refresh — plus
// the idle timeout, on the gateway's clock) is refused, so even a stale copy never extends a
// session; one due for a refresh runs the script, which decides again on Redis's
// clock and whose write invalidates every replica's copy. A hot session costs no round trip,
// a refresh one. When the copy was not cached (the read was this call's round trip) and a
// refresh is due, the script runs in the background instead, so no call waits on two round
// trips. Every write to the hash (revoke, logout, rotate, revoke-all, MFA challenge and step-up,
// refresh) makes Redis push an invalidation to every replica that cached it; a copy lives at
// most CacheTTL, and never past the key's TTL when it was read.
//
// ref derives from 108 bits of the token's SHA-256, so finding its key proves the token (a
// second preimage is infeasible) and no hash of the token is compared: hashes that still hold
// a tokenHash field (written before it was dropped) are read the same way, the field ignored.
//
// A missing session (or an expired one) is apperr.NotFound; a corrupt one ErrCorrupt (counted
// and logged without values).
func (r *Sessions) Authorize(ctx context.Context, ref session.Ref) (*AuthContext, error) {
	if r.cacheTTL > 0 {
		return r.authorizeCached(ctx, ref)
	}
	return r.authorizeScript(ctx, ref)
}

// AuthorizeFresh is Authorize reading Redis, never the client-side cache: for a session this
// gateway has just changed, whose cached copy may predate the change (Redis's invalidation push
// trails the write's reply). It is counted as a cache bypass.
func (r *Sessions) AuthorizeFresh(ctx context.Context, ref session.Ref) (*AuthContext, error) {
	if r.cacheTTL > 0 {
		r.o.Metrics.Event(ctx, sessObject, "cache_bypassed_after_write")
	}
	return r.authorizeScript(ctx, ref)
}

// CacheStats returns how many Authorize reads the client-side cache answered (hits) and how
// many went to Redis (misses) since start; both stay 0 with the cache off.
func (r *Sessions) CacheStats() (hits, misses int64) { return r.hits.Load(), r.misses.Load() }

// authorizeScript reads, decides and refreshes in one script.
func (r *Sessions) authorizeScript(ctx context.Context, ref session.Ref) (*AuthContext, error) {
	args := make([]string, 0, 2+len(sessAuthFields))
	args = append(args, r.fraction, r.idleMs)
	args = append(args, sessAuthFields...)
	rep, err := r.run(ctx, "session_authorize", scriptSessionAuthorize, []string{r.sessionKey(ref)}, args)
	if err != nil {
		return nil, err
	}
	switch rep.Code() {
	case CodeNotFound:
		return nil, r.missing(ctx, ref)
	case CodeOK: // {'OK', nowMs, pttlMs, refreshed, <one value per sessAuthFields>}
	default:
		return nil, r.badReply(ctx, "session_authorize", rep.Unexpected())
	}
	d := rep.Reader()
	now, pttl, refreshed := d.Int(0), d.Int(1), d.Int(2)
	if err := d.Err(); err != nil {
		return nil, r.badReply(ctx, "session_authorize", err)
	}
	m, size, err := pooledFields(rep.vals[3:], sessAuthFields)
	if err != nil {
		return nil, r.badReply(ctx, "session_authorize", fmt.Errorf("session_authorize: %w", err))
	}
	defer releaseFields(m)
	r.o.Metrics.Payload(ctx, sessObject, size)
	ac, _, err := r.parseAuth(ctx, ref, m)
	if err != nil {
		return nil, err
	}
	ac.IdleExpiresAt = ac.AbsoluteExpiresAt
	if pttl >= 0 {
		ac.IdleExpiresAt = sessIdleEnd(now, pttl, ac.AbsoluteExpiresAt)
	}
	if refreshed == 1 {
		ac.Refreshed, ac.LastSeenAt = true, sessTime(now)
		r.o.Metrics.Event(ctx, sessObject, "ttl_refresh")
	}
	r.o.Metrics.Read(ctx, sessObject, ac.Outcome)
	return ac, nil
}

// authorizeCached reads through the client-side cache and decides on the gateway's clock;
// only a refresh goes to Redis (the script). A session already decoded from the cache is
// answered from the memo (authMemo), without calling the client.
func (r *Sessions) authorizeCached(ctx context.Context, ref session.Ref) (*AuthContext, error) {
	now := r.now()
	if r.memo != nil {
		if e, ok := r.memo.get(ref, now); ok {
			r.hits.Add(1)
			ac := e.ac
			ac.CacheHit = true
			return r.decideCached(ctx, ref, &ac, e.idle, true, now)
		}
	}
	var v memoVersion
	if r.memo != nil {
		v = r.memo.version(ref)
	}
	res := r.client.DoCache(ctx, r.client.B().Hmget().Key(r.sessionKey(ref)).Field(sessAuthFields...).Cache(), r.cacheTTL)
	hit := res.IsCacheHit()
	if hit {
		r.hits.Add(1)
	} else {
		r.misses.Add(1)
	}
	vals, err := res.ToArray()
	if err != nil {
		return nil, r.readErr(ctx, "session authorize", err)
	}
	m, size, err := pooledFields(vals, sessAuthFields)
	if err != nil {
		return nil, fmt.Errorf("session authorize: %w", err)
	}
	defer releaseFields(m)
	if !hit {
		r.o.Metrics.Payload(ctx, sessObject, size)
	}
	if !sessAnyOf(m, sessAuthFields[:sessAuthKeyFields]) {
		return nil, r.missing(ctx, ref)
	}
	ac, idle, err := r.parseAuth(ctx, ref, m)
	if err != nil {
		return nil, err
	}
	ac.CacheHit = hit
	if r.memo != nil {
		// The decoded copy lives no longer than the copy it was decoded from: a hit may come
		// from a copy rueidis has held for most of its TTL already.
		until := now.Add(r.cacheTTL)
		if px := res.CachePXAT(); hit && px > 0 && time.UnixMilli(px).Before(until) {
			until = time.UnixMilli(px)
		}
		r.memo.put(ref, &memoEntry{ac: *ac, idle: idle, until: until}, v, now)
	}
	return r.decideCached(ctx, ref, ac, idle, hit, now)
}

// decideCached applies the session model's expiry rule (session.Expiry) to a session read from the cache (or from Redis by
// authorizeCached's own round trip, when hit is false): past either deadline it is missing,
// and a due refresh runs the script (in the background when this call already spent its
// round trip).
func (r *Sessions) decideCached(ctx context.Context, ref session.Ref, ac *AuthContext, idle int64, hit bool, t time.Time) (*AuthContext, error) {
	end, verdict := r.expiry.Judge(t.UnixMilli(), sessMs(ac.LastSeenAt), idle, sessMs(ac.AbsoluteExpiresAt))
	switch verdict {
	case session.Expired:
		// Past a deadline: the key is gone or about to go; a copy that outlived it is not served.
		r.o.Metrics.Event(ctx, sessObject, "expired_in_cache")
		return nil, r.missing(ctx, ref)
	case session.RefreshDue:
		if hit {
			return r.authorizeScript(ctx, ref)
		}
		r.refreshLater(ctx, ref)
	}
	ac.IdleExpiresAt = sessTime(end)
	r.o.Metrics.Read(ctx, sessObject, ac.Outcome)
	return ac, nil
}

// maxBackgroundRefreshes bounds the refreshes running in the background; when all are busy a
// due refresh is skipped, and the session's next request finds it still due.
const maxBackgroundRefreshes = 64

// refreshLater runs the refresh script without making the caller wait: its request already
// spent its round trip reading the session. The script checks everything again, so a session
// revoked meanwhile is not brought back.
func (r *Sessions) refreshLater(ctx context.Context, ref session.Ref) {
	select {
	case r.refreshing <- struct{}{}:
	default:
		r.o.Metrics.Event(ctx, sessObject, "refresh_skipped")
		return
	}
	ctx = context.WithoutCancel(ctx) // keeps the trace; the store bounds the call's time
	go func() {
		defer func() { <-r.refreshing }()
		if _, err := r.authorizeScript(ctx, ref); err != nil && !errors.Is(err, apperr.NotFound) {
			r.o.Logger.WarnContext(ctx, "background session refresh failed", "key_pattern", r.sessionKeyPattern(), "err", err)
		}
	}()
}

// parseAuth classifies the fields Authorize read — found or old schema, else corrupt (counted
// and logged by field name) — and returns the session's view and its idle timeout in ms.
func (r *Sessions) parseAuth(ctx context.Context, ref session.Ref, m map[string]string) (*AuthContext, int64, error) {
	f := newFields(m)
	v, idle := decodeView(f, ref)
	ac := &AuthContext{Session: v}
	ac.Outcome = f.schema()
	if err := f.err(sessObject); err != nil {
		return nil, 0, r.corrupt(ctx, ref, f, err)
	}
	ac.SchemaVersion = sessSchema(ac.Outcome)
	return ac, idle, nil
}

// missing counts a read that found no session for the token.
func (r *Sessions) missing(ctx context.Context, ref session.Ref) error {
	r.o.Metrics.Read(ctx, sessObject, Missing)
	return fmt.Errorf("session %s: %w", ref.ID(), apperr.NotFound)
}

// sessAnyOf reports whether m holds any of names.
func sessAnyOf(m map[string]string, names []string) bool {
	for _, n := range names {
		if _, ok := m[n]; ok {
			return true
		}
	}
	return false
}

// sessMs is t in Unix milliseconds, 0 for the zero time.
func sessMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
