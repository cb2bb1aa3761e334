package sessionstore

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// sessHotFields are all a forward-auth decision reads on a miss (one HMGET with the key's PTTL
// in the same round trip): who and which tenant (the token's tag must hash to them), the level,
// whether the login still waits for its MFA verify, the idle timeout the refresh rule needs,
// the groups the access rules and X-Auth-Groups need, and the verifier MAC the token must match.
// The key's PTTL is the end of the idle window (never past the absolute deadline); the
// deadline itself is learnt from the refresh script when a refresh is due. These are a
// compatibility contract: a later schema may add fields but must not change what these mean
// (the hot path does not read schemaVersion; the view, the device list and the admin read do).
var sessHotFields = []string{fieldUserID, fieldTenantID, fieldAuthLevel, fieldLoginPending, fieldIdleTimeout, fieldGroups, fieldVerifierMAC}

// CheckOwner is SessionOptions.OwnerCheck's verdict on (tenantID, userID) for tag.
func (r *Sessions) CheckOwner(tag, tenantID, userID string) session.OwnerVerdict {
	switch {
	case r.o.OwnerCheck == nil:
		return session.OwnerUnchecked
	case r.o.OwnerCheck(tag, tenantID, userID):
		return session.OwnerMatches
	}
	return session.OwnerMismatch
}

// Authorize authenticates a session by its reference and returns its view: the full one ("who
// am I") with o.View, else only the hot fields forward auth needs. It slides the idle window
// when less than RefreshFraction of it is left, never past the absolute deadline.
//
// Without the client-side cache every call is one script (one round trip) that reads,
// decides and refreshes on Redis's clock. With it, a session is kept decoded in the memo
// (authMemo), filled by a read of one round trip and dropped by Redis's invalidation push
// for its key, and the decision is made here on the gateway's clock: a session past its
// absolute deadline or the end of its idle window is refused, so even a stale copy never
// extends a session; one due for a refresh runs the script, which decides again on Redis's
// clock and whose write invalidates every replica's copy. A hot session costs no round trip, a
// refresh one; when the read was this call's own round trip, a due refresh runs in the
// background instead, so no call waits on two. Every write to the hash (revoke, logout,
// rotate, revoke-all, MFA challenge and step-up, refresh) makes Redis push an invalidation to
// every replica; a copy lives at most CacheTTL, and never past the key's expiry.
//
// With broadcast tracking (store.Capabilities.Broadcasts) Redis pushes every write under the
// session prefix whether or not the key was read through rueidis' cache, so the memo is filled
// by plain reads (HMGET and PTTL) and rueidis keeps no second copy of sessions. With default
// tracking a key is tracked only when read through rueidis' cache: the read is then the view
// fields through it.
//
// ref (the token's tag and selector) only names the session; o.VerifierMAC, the MAC of the
// token's verifier, proves the token: it is compared in constant time with the stored one,
// after the read (of Redis or of the kept copy, which keeps the MAC with the view) and before
// any refresh. A mismatch is session.ErrWrongVerifier, which the absent cache does not
// remember (it would lock the session's owner out).
//
// Without o.View only the hot fields (sessHotFields) are read and the answer is Partial: what
// forward auth and every operation but "who am I" need. With o.Fresh the kept copy is not
// consulted (counted as a cache bypass). A missing session (or an expired one) is
// apperr.NotFound; a corrupt one ErrCorrupt (counted and logged without values).
func (r *Sessions) Authorize(ctx context.Context, ref session.Ref, o session.AuthorizeOptions) (*session.AuthContext, error) {
	if o.Fresh {
		return r.authorizeFresh(ctx, ref, o.View, o.VerifierMAC)
	}
	return r.authorize(ctx, ref, o.View, o.VerifierMAC)
}

func (r *Sessions) authorizeFresh(ctx context.Context, ref session.Ref, view bool, mac string) (*session.AuthContext, error) {
	if r.cacheTTL > 0 {
		r.metrics.Event(ctx, sessObject, "cache_bypassed_after_write")
	}
	return r.layout.authorizeScript(ctx, ref, view, mac)
}

// CacheStats returns how many authorizations the gateway's copy answered (hits) and how many
// read Redis (misses) since start; both stay 0 with the cache off.
func (r *Sessions) CacheStats() (hits, misses int64) { return r.hits.Load(), r.misses.Load() }

func (r *Sessions) authorize(ctx context.Context, ref session.Ref, view bool, mac string) (*session.AuthContext, error) {
	var now time.Time // (only the cached path reads the clock)
	if r.cacheTTL > 0 {
		now = r.now()
		if r.memo != nil {
			if e, ok := r.memo.get(ref, now); ok && (e.view != nil || !view) {
				r.hits.Add(1)
				return r.decide(ctx, ref, e, view, mac, true, now)
			}
		}
	}
	if r.absent != nil {
		return r.authorizeUnlessAbsent(ctx, ref, view, mac, now)
	}
	return r.authorizeRead(ctx, ref, view, mac, now)
}

// authorizeRead is a read of Redis for authorize: the script with the cache off, else a plain
// or a tracked read (now is the cached path's clock).
func (r *Sessions) authorizeRead(ctx context.Context, ref session.Ref, view bool, mac string, now time.Time) (*session.AuthContext, error) {
	switch {
	case r.cacheTTL <= 0:
		return r.layout.authorizeScript(ctx, ref, view, mac)
	case r.broadcast:
		return r.layout.readPlain(ctx, ref, view, mac, now)
	}
	return r.layout.readTracked(ctx, ref, view, mac, now)
}

// decide checks the token's verifier MAC against the session's (a mismatch with a kept copy is
// asked of Redis once more, one round trip), then applies the session model's expiry rule (session.Expiry) to a session from the gateway's copy (hit) or from this
// call's own read: past either deadline it is missing, and a due refresh runs the script (in
// the background when this call already spent its round trip).
func (r *Sessions) decide(ctx context.Context, ref session.Ref, e *memoEntry, view bool, mac string, hit bool, t time.Time) (*session.AuthContext, error) {
	h := &e.hot
	if !sameMAC(h.mac, mac) {
		if hit {
			// A kept copy may predate a rotation or step-up on another gateway whose
			// invalidation push has not arrived yet: Redis decides, never the copy, and a
			// copy Redis proved stale is dropped.
			ac, err := r.layout.authorizeScript(ctx, ref, view, mac)
			if err == nil && r.memo != nil {
				r.memo.remove(ref, e)
			}
			return ac, err
		}
		return nil, r.wrongVerifier(ctx, ref)
	}
	switch r.expiry.JudgeEnd(t.UnixMilli(), h.end, h.idle, h.abs) {
	case session.Expired:
		// Past a deadline: the key is gone or about to go; a copy that outlived it is not served.
		r.metrics.Event(ctx, sessObject, "expired_in_cache")
		return nil, r.missing(ctx, ref)
	case session.RefreshDue:
		if hit {
			return r.layout.authorizeScript(ctx, ref, view, mac)
		}
		r.refreshLater(ctx, ref, mac)
	}
	ac := e.context(ref, view, hit)
	r.metrics.Read(ctx, sessObject, repo.Outcome(ac.Outcome))
	return ac, nil
}

// maxBackgroundRefreshes bounds the refreshes running in the background; when all are busy a
// due refresh is skipped, and the session's next request finds it still due.
const maxBackgroundRefreshes = 64

// refreshLater runs the refresh script without making the caller wait: its request already
// spent its round trip reading the session. The script checks everything again, so a session
// revoked meanwhile is not brought back.
func (r *Sessions) refreshLater(ctx context.Context, ref session.Ref, mac string) {
	select {
	case r.refreshing <- struct{}{}:
	default:
		r.metrics.Event(ctx, sessObject, "refresh_skipped")
		return
	}
	ctx = context.WithoutCancel(ctx) // keeps the trace; the store bounds the call's time
	go func() {
		defer func() { <-r.refreshing }()
		if _, err := r.layout.authorizeScript(ctx, ref, false, mac); err != nil && !errors.Is(err, apperr.NotFound) {
			r.log.WarnContext(ctx, "background session refresh failed", "key_pattern", r.keyPattern(), "err", err)
		}
	}()
}

// missing counts a read that found no session for the token.
func (r *Sessions) missing(ctx context.Context, ref session.Ref) error {
	r.metrics.Read(ctx, sessObject, repo.Missing)
	return fmt.Errorf("session %s: %w", ref.ID(), apperr.NotFound)
}

// wrongVerifier counts a token whose verifier is not the session's.
func (r *Sessions) wrongVerifier(ctx context.Context, ref session.Ref) error {
	r.metrics.Event(ctx, sessObject, "wrong_verifier")
	return fmt.Errorf("session %s: %w", ref.ID(), session.ErrWrongVerifier)
}

// sameMAC reports in constant time whether the stored verifier MAC is the presented one (an
// empty stored MAC matches nothing).
func sameMAC(stored, presented string) bool {
	return stored != "" && len(stored) == len(presented) && subtle.ConstantTimeCompare([]byte(stored), []byte(presented)) == 1
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
