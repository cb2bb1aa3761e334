package sessionstore

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// The reads behind Authorize (the full view or the hot fields): a plain read under broadcast
// tracking, a read through rueidis' cache under default tracking, and the refresh script.

// sessKeyFields decide, for a read of the view fields, whether the session exists: a hash
// holding none of them is taken for missing (a hash holding some but not all is corrupt).
var sessKeyFields = []string{fieldUserID, fieldTenantID, fieldStatus, fieldAuthLevel, fieldAbsoluteExpires, fieldIdleTimeout, fieldSchemaVersion}

// hotSession is what the decision needs, as the memo keeps it.
type hotSession struct {
	userID, tenantID string
	level            string   // session.LevelBasic or session.LevelMFA (the constants: no copy kept)
	pending          bool     // the login waits for its MFA verify
	groups           []string // (nil: none)
	mac              string   // the stored verifier MAC
	idle             int64    // the idle timeout, ms
	// end is when the key expires (the end of the idle window, never past the absolute
	// deadline), Unix ms on the gateway's clock; 0 when unknown.
	end int64
	// abs is the absolute deadline, Unix ms; 0 until a view read or the refresh script told.
	abs     int64
	outcome repo.Outcome
	owner   session.OwnerVerdict // (SessionOptions.OwnerCheck's, made when decoded)
}

// readPlain is a miss under broadcast tracking: the fields and the key's PTTL in one round
// trip (HMGET and PTTL, pipelined), decoded into the memo. Redis pushes every later write to
// the key, read through rueidis' cache or not, and the memo's version check keeps a push that
// overtakes this read from being undone by it.
func (r perSessionLayout) readPlain(ctx context.Context, ref session.Ref, view bool, mac string, now time.Time) (*session.AuthContext, error) {
	names, v := r.readStart(ref, view)
	key := r.sessionKey(ref)
	res := r.client.DoMulti(ctx, r.client.B().Hmget().Key(key).Field(names...).Build(), r.client.B().Pttl().Key(key).Build())
	r.misses.Add(1)
	for _, x := range res {
		if err := x.Error(); err != nil {
			return nil, r.readErr(ctx, "session authorize", err)
		}
	}
	vals, err := res[0].ToArray()
	if err != nil {
		return nil, r.readErr(ctx, "session authorize", err)
	}
	pttl, err := res[1].AsInt64()
	if err != nil {
		return nil, r.readErr(ctx, "session authorize", err)
	}
	if pttl == -2 {
		return nil, r.missing(ctx, ref)
	}
	if pttl < 0 { // a hash without expiry (not written by a gateway): the script gives it one
		return r.authorizeScript(ctx, ref, view, mac)
	}
	m, size, err := repo.PooledFields(vals, names)
	if err != nil {
		return nil, fmt.Errorf("session authorize: %w", err)
	}
	defer repo.ReleaseFields(m)
	r.metrics.Payload(ctx, sessObject, size)
	if !sessAnyOf(m, sessKeyFields) {
		return nil, r.missing(ctx, ref)
	}
	e, err := r.decodeEntry(ctx, ref, m, view)
	if err != nil {
		return nil, err
	}
	e.hot.end = now.UnixMilli() + pttl
	if e.hot.abs > 0 { // a view read knows the deadline; the key's TTL never passes it anyway
		e.hot.end = min(e.hot.end, e.hot.abs)
	}
	r.remember(ref, e, v, now, time.Time{})
	return r.decide(ctx, ref, e, view, mac, false, now)
}

// readTracked is a miss or a hit of rueidis' cache under default tracking: there Redis tracks
// (and later invalidates) only a key read through the cache, so the read is the view fields
// through it, whatever the caller needs.
func (r perSessionLayout) readTracked(ctx context.Context, ref session.Ref, view bool, mac string, now time.Time) (*session.AuthContext, error) {
	_, v := r.readStart(ref, true)
	res := r.client.DoCache(ctx, r.client.B().Hmget().Key(r.sessionKey(ref)).Field(sessViewFields...).Cache(), r.cacheTTL)
	vals, hit, err := r.cachedArray(ctx, res)
	if err != nil {
		return nil, err
	}
	m, size, err := repo.PooledFields(vals, sessViewFields)
	if err != nil {
		return nil, fmt.Errorf("session authorize: %w", err)
	}
	defer repo.ReleaseFields(m)
	if !hit {
		r.metrics.Payload(ctx, sessObject, size)
	}
	if !sessAnyOf(m, sessKeyFields) {
		return nil, r.missing(ctx, ref)
	}
	return r.decideTracked(ctx, ref, m, v, res, view, mac, now)
}

// decideTracked decodes the view fields m of a read through rueidis' cache (res, taken at
// memo version v) in either layout, keeps the decoded copy and decides.
func (r *Sessions) decideTracked(ctx context.Context, ref session.Ref, m map[string]string, v memoVersion, res rueidis.RedisResult, view bool, mac string, now time.Time) (*session.AuthContext, error) {
	e, err := r.decodeEntry(ctx, ref, m, true)
	if err != nil {
		return nil, err
	}
	e.hot.end, _ = r.expiry.Judge(now.UnixMilli(), sessMs(e.view.LastSeenAt), e.hot.idle, e.hot.abs)
	// The decoded copy lives no longer than the copy it was decoded from: a hit may come from
	// a copy rueidis has held for most of its TTL already.
	hit := res.IsCacheHit()
	var copyEnd time.Time
	if px := res.CachePXAT(); hit && px > 0 {
		copyEnd = time.UnixMilli(px)
	}
	r.remember(ref, e, v, now, copyEnd)
	return r.decide(ctx, ref, e, view, mac, hit, now)
}

// readStart is what a read of ref asks for (the view's fields or the hot ones) and the memo's
// version taken before it starts (for remember).
func (r *Sessions) readStart(ref session.Ref, view bool) ([]string, memoVersion) {
	names := sessHotFields
	if view {
		names = sessViewFields
	}
	var v memoVersion
	if r.memo != nil {
		v = r.memo.version(ref)
	}
	return names, v
}

// remember keeps e in the memo until a cache TTL from now, never past copyEnd (when set: the
// end of rueidis' copy it was decoded from). An entry may outlive the session's end: decide
// refuses it then without asking Redis (the key is gone or about to go).
func (r *Sessions) remember(ref session.Ref, e *memoEntry, v memoVersion, now, copyEnd time.Time) {
	e.until = now.Add(r.cacheTTL)
	if !copyEnd.IsZero() && copyEnd.Before(e.until) {
		e.until = copyEnd
	}
	if r.memo != nil {
		r.memo.put(ref, e, v, now)
	}
}

// authorizeScript reads, decides and refreshes in one script (the refresh only for the
// session whose verifier MAC is mac). Under broadcast tracking its
// answer fills the memo too (with the absolute deadline the script reports, so a session
// whose window cannot slide further is not found due again on every request).
func (r perSessionLayout) authorizeScript(ctx context.Context, ref session.Ref, view bool, mac string) (*session.AuthContext, error) {
	names, v := r.readStart(ref, view)
	start := r.now()
	args := make([]string, 0, 3+len(names))
	args = append(args, r.fraction, r.idleMs, mac)
	args = append(args, names...)
	rep, err := r.run(ctx, "session_authorize", scriptSessionAuthorize, []string{r.sessionKey(ref)}, args)
	if err != nil {
		return nil, err
	}
	switch rep.Code() {
	case repo.CodeNotFound:
		return nil, r.missing(ctx, ref)
	case repo.CodeOK: // {'OK', nowMs, pttlMs, refreshed, absoluteExpiresAtMs, <one value per field>}
	default:
		return nil, r.badReply(ctx, "session_authorize", rep.Unexpected())
	}
	d := rep.Reader()
	pttl, refreshed, abs := d.Int(1), d.Int(2), d.Int(3)
	if err := d.Err(); err != nil || rep.Len() < 5 {
		return nil, r.badReply(ctx, "session_authorize", fmt.Errorf("session_authorize: short or malformed reply: %v", err))
	}
	m, size, err := repo.PooledFields(rep.Values(4), names)
	if err != nil {
		return nil, r.badReply(ctx, "session_authorize", fmt.Errorf("session_authorize: %w", err))
	}
	defer repo.ReleaseFields(m)
	r.metrics.Payload(ctx, sessObject, size)
	return r.scriptAnswer(ctx, ref, m, view, scriptRead{pttl: pttl, refreshed: refreshed == 1, abs: abs, start: start, v: v, mac: mac})
}

// scriptRead is what an authorize script answered beside the fields (either layout's).
type scriptRead struct {
	pttl, abs int64
	refreshed bool
	start     time.Time // when the call started, on the gateway's clock
	v         memoVersion
	mac       string // the presented token's verifier MAC
}

// scriptAnswer decodes the fields an authorize script read (m, flat names), keeps the result
// in the memo and counts the read.
func (r *Sessions) scriptAnswer(ctx context.Context, ref session.Ref, m map[string]string, view bool, s scriptRead) (*session.AuthContext, error) {
	e, err := r.decodeEntry(ctx, ref, m, view)
	if err != nil {
		return nil, err
	}
	if s.abs > 0 {
		e.hot.abs = s.abs
	}
	// The end on the gateway's clock, from when the call started: never later than Redis's.
	e.hot.end = e.hot.abs
	if s.pttl >= 0 {
		e.hot.end = s.start.UnixMilli() + s.pttl
		if e.hot.abs > 0 {
			e.hot.end = min(e.hot.end, e.hot.abs)
		}
	}
	if r.memo != nil && r.broadcast {
		r.remember(ref, e, s.v, s.start, time.Time{})
	}
	if !sameMAC(e.hot.mac, s.mac) {
		return nil, r.wrongVerifier(ctx, ref)
	}
	ac := e.context(ref, view, false)
	if s.refreshed {
		ac.Refreshed = true // (the view's lastSeenAtMs was read after the refresh wrote it)
		r.metrics.Event(ctx, sessObject, "ttl_refresh")
	}
	r.metrics.Read(ctx, sessObject, repo.Outcome(ac.Outcome))
	return ac, nil
}

// decodeEntry classifies what a read found — the view fields (view) or the hot ones — as found
// or old schema, else corrupt (counted and logged by field name), and decodes it. The hot
// fields carry no schema number: what they mean does not change (sessHotFields).
func (r *Sessions) decodeEntry(ctx context.Context, ref session.Ref, m map[string]string, view bool) (*memoEntry, error) {
	f := repo.NewFields(m)
	e := &memoEntry{}
	if view {
		s, idle := decodeView(f, ref)
		outcome := f.Schema()
		if err := f.Err(sessObject); err != nil {
			return nil, r.corrupt(ctx, ref, f, err)
		}
		s.SchemaVersion = sessSchema(outcome)
		e.view = &s
		e.hot = hotSession{userID: s.UserID, tenantID: s.TenantID, level: sessLevel(s.AuthLevel), pending: s.LoginPending,
			groups: s.Groups, mac: f.Str(fieldVerifierMAC), idle: idle, abs: sessMs(s.AbsoluteExpiresAt), outcome: outcome}
		if err := f.Err(sessObject); err != nil { // (a session without a verifier MAC is corrupt)
			return nil, r.corrupt(ctx, ref, f, err)
		}
		e.hot.owner = r.CheckOwner(ref.Tag, e.hot.tenantID, e.hot.userID)
		return e, nil
	}
	e.hot = hotSession{userID: f.Str(fieldUserID), tenantID: f.Str(fieldTenantID), level: sessEnum(f, fieldAuthLevel, session.LevelBasic),
		pending: sessFlag(f, fieldLoginPending), groups: sessGroups(f), mac: f.Str(fieldVerifierMAC), idle: sessIdleMs(f), outcome: repo.Found}
	sessCheckEnums(f, session.Active, e.hot.level)
	if err := f.Err(sessObject); err != nil {
		return nil, r.corrupt(ctx, ref, f, err)
	}
	e.hot.level = sessLevel(e.hot.level)
	e.hot.owner = r.CheckOwner(ref.Tag, e.hot.tenantID, e.hot.userID)
	return e, nil
}

// context is the entry as authorization answers it: the full view, or the hot fields only.
func (e *memoEntry) context(ref session.Ref, view, hit bool) *session.AuthContext {
	h := &e.hot
	ac := &session.AuthContext{CacheHit: hit, Outcome: string(h.outcome), Owner: h.owner, Derived: &e.derived}
	if view {
		ac.Session = *e.view
	} else {
		ac.Session, ac.Partial = session.Session{Ref: ref, UserID: h.userID, TenantID: h.tenantID,
			AuthLevel: h.level, LoginPending: h.pending, Groups: h.groups}, true
	}
	ac.IdleExpiresAt = sessTime(h.end)
	return ac
}

// sessLevel is level as the package's constant, so a kept entry does not hold the reply's copy.
func sessLevel(level string) string {
	if level == session.LevelMFA {
		return session.LevelMFA
	}
	return session.LevelBasic
}
