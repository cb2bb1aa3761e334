package sessionstore

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// The per-user layout's reads behind Authorize (every option) and Get:
// the same decisions, memo and reply shapes as the per-session reads (sessions_authorize_read.go,
// sessions_read.go), on the session's fields in the user's hash.
//
// A plain read is ONE round trip of two pipelined commands on the user's key:
//
//	HMGET <userKey> userId tenantId <part>:authLevel <part>:loginPending <part>:idleTimeoutMs <part>:groups <part>:live
//	HPTTL <userKey> FIELDS 1 <part>:live
//
// (the view read asks for the view's fields instead of the hot seven, and adds HPEXPIRETIME of
// the marker: the session's last use derives from it, perUserLastSeen). HPTTL is the end of the
// idle window and tells whether the session is live (-2: it is not).
//
// Under default tracking (readTracked) the read goes through rueidis' cache, and only the
// HMGET and the HPEXPIRETIME do (readTracked says why).

var scriptPerUserAuthorize = script("session_u_authorize")

// perUserHotNames are the hot fields as the user's hash names them (perUserHotFlat, in that
// order): sessHotFields, the live marker in place of verifierMac (it holds it).
func perUserHotNames(part string) []string {
	return []string{fieldUserID, fieldTenantID, partField(part, fieldAuthLevel), partField(part, fieldLoginPending),
		partField(part, fieldIdleTimeout), partField(part, fieldGroups), partField(part, fieldLive)}
}

// perUserHotFlat are the flat names the hot read's values decode under (splitLive then cuts the
// marker into absoluteExpiresAtMs and verifierMac).
var perUserHotFlat = []string{fieldUserID, fieldTenantID, fieldAuthLevel, fieldLoginPending, fieldIdleTimeout, fieldGroups, fieldLive}

// perUserViewNames are the view's fields (sessViewFields) as the user's hash names them: the user's
// own (userId, tenantId, schemaVersion), then the session's, the live marker for createdAtMs,
// absoluteExpiresAtMs and verifierMac.
func perUserViewNames(part string) []string {
	out := make([]string, 0, len(sessViewFields))
	out = append(out, fieldUserID, fieldTenantID, fieldSchemaVersion, partField(part, fieldLive))
	for _, n := range sessViewFields {
		switch n {
		case fieldUserID, fieldTenantID, fieldSchemaVersion, fieldCreatedAt, fieldAbsoluteExpires, fieldVerifierMAC:
		default:
			out = append(out, partField(part, n))
		}
	}
	return out
}

// perUserNames is what a read of ref asks the user's hash for (wire) and, for the hot read, the
// flat names the values decode under (nil for the view: sessionView maps those).
func perUserNames(part string, view bool) (wire, flat []string) {
	if view {
		return perUserViewNames(part), nil
	}
	return perUserHotNames(part), perUserHotFlat
}

// perUserFields decodes an HMGET reply of wire into the flat field map decodeView reads (the
// per-session hash's names, the per-user layout's defaults applied, for the view the last use
// derived from exp, the marker's expiry: perUserLastSeen). A pooled map (the hot read's, flat
// names) goes back with releaseFields once read.
func perUserFields(vals []rueidis.RedisMessage, part string, wire, flat []string, exp int64) (m map[string]string, size int, pooled bool, err error) {
	if flat != nil {
		if m, size, err = repo.PooledFields(vals, flat); err != nil {
			return nil, 0, false, err
		}
		splitLive(m)
		return m, size, true, nil
	}
	user, size, err := repo.PooledFields(vals, wire)
	if err != nil {
		return nil, 0, false, err
	}
	m = sessionView(user, part)
	repo.ReleaseFields(user)
	perUserLastSeen(m, exp)
	return m, size, false, nil
}

// plainCmds are the commands of a plain read (see above) of wire, the view's fields; nil wire
// is the hot read (perUserHotNames, built here from one string). view adds the marker's expiry.
func (r perUserLayout) plainCmds(ref session.Ref, wire []string, view bool) rueidis.Commands {
	key := r.userKey(ref.Tag)
	var read, ttl rueidis.Completed
	if wire == nil {
		level, pending, idle, groups, live := perUserHotParts(ref.Part)
		read = r.client.B().Hmget().Key(key).Field(fieldUserID, fieldTenantID, level, pending, idle, groups, live).Build()
		ttl = r.client.B().Hpttl().Key(key).Fields().Numfields(1).Field(live).Build()
	} else {
		read = r.client.B().Hmget().Key(key).Field(wire...).Build()
		ttl = r.client.B().Hpttl().Key(key).Fields().Numfields(1).Field(partField(ref.Part, fieldLive)).Build()
	}
	cmds := rueidis.Commands{read, ttl}
	if view {
		cmds = append(cmds, r.markerExpiry(key, ref.Part))
	}
	return cmds
}

// perUserHotParts are the session's names in perUserHotNames (its level, pending login, idle
// timeout, groups and live marker), cut from one string: a miss builds them all.
func perUserHotParts(part string) (level, pending, idle, groups, live string) {
	s := part + ":" + fieldAuthLevel + part + ":" + fieldLoginPending + part + ":" + fieldIdleTimeout + part + ":" + fieldGroups +
		part + ":" + fieldLive
	n := len(part) + 1
	i := n + len(fieldAuthLevel)
	j := i + n + len(fieldLoginPending)
	k := j + n + len(fieldIdleTimeout)
	l := k + n + len(fieldGroups)
	return s[:i], s[i:j], s[j:k], s[k:l], s[l:]
}

// perUserRead is a plain read's reply: the HMGET values, the marker's HPTTL (-2: no live session),
// and for a view the marker's expiry (Unix ms; 0 otherwise).
type perUserRead struct {
	vals      []rueidis.RedisMessage
	pttl, exp int64
}

// plainRead runs one plain read of wire (nil: the hot fields); op names it in errors.
func (r perUserLayout) plainRead(ctx context.Context, op string, ref session.Ref, wire []string, view bool) (perUserRead, error) {
	res := r.client.DoMulti(ctx, r.plainCmds(ref, wire, view)...)
	for _, x := range res {
		if err := x.Error(); err != nil && !rueidis.IsRedisNil(err) {
			return perUserRead{}, r.readErr(ctx, op, err)
		}
	}
	vals, err := res[0].ToArray()
	if err != nil {
		return perUserRead{}, r.readErr(ctx, op, err)
	}
	pttl, err := fieldTTL(res[1])
	if err != nil {
		return perUserRead{}, r.readErr(ctx, op, err)
	}
	var exp int64
	if view {
		if exp, err = fieldTTL(res[2]); err != nil {
			return perUserRead{}, r.readErr(ctx, op, err)
		}
	}
	return perUserRead{vals: vals, pttl: pttl, exp: exp}, nil
}

// fieldTTL is the one field's HPTTL (or HPEXPIRETIME): -2 when the field (or the key) does
// not exist, -1 when it has no TTL.
func fieldTTL(res rueidis.RedisResult) (int64, error) {
	if err := res.Error(); rueidis.IsRedisNil(err) {
		return -2, nil
	}
	v, err := res.ToArray() // (AsIntSlice would copy them)
	if err != nil {
		return 0, err
	}
	if len(v) == 0 {
		return -2, nil
	}
	return v[0].AsInt64()
}

// readPlain in the per-user layout: a miss under broadcast tracking (Redis pushes
// every write to the user's hash, read through rueidis' cache or not).
func (r perUserLayout) readPlain(ctx context.Context, ref session.Ref, view bool, mac string, now time.Time) (*session.AuthContext, error) {
	var v memoVersion
	if r.memo != nil {
		v = r.memo.version(ref)
	}
	var wire, flat []string // the hot read's wire names are built with its commands (plainCmds)
	if view {
		wire = perUserViewNames(ref.Part)
	} else {
		flat = perUserHotFlat
	}
	p, err := r.plainRead(ctx, "session authorize", ref, wire, view)
	r.misses.Add(1)
	if err != nil {
		return nil, err
	}
	if p.pttl == -2 {
		return nil, r.missing(ctx, ref)
	}
	if p.pttl < 0 { // a marker without a field TTL (not written by a gateway): the script gives it one
		return r.authorizeScript(ctx, ref, view, mac)
	}
	m, size, pooled, err := perUserFields(p.vals, ref.Part, wire, flat, p.exp)
	if err != nil {
		return nil, fmt.Errorf("session authorize: %w", err)
	}
	if pooled {
		defer repo.ReleaseFields(m)
	}
	r.metrics.Payload(ctx, sessObject, size)
	e, err := r.decodeEntry(ctx, ref, m, view)
	if err != nil {
		return nil, err
	}
	e.hot.end = now.UnixMilli() + p.pttl
	if e.hot.abs > 0 {
		e.hot.end = min(e.hot.end, e.hot.abs)
	}
	r.remember(ref, e, v, now, time.Time{})
	return r.decide(ctx, ref, e, view, mac, false, now)
}

// readTracked in the per-user layout: under default tracking Redis tracks (and
// later invalidates) only a key read through rueidis' cache, so the read is the view's fields
// of the user's hash and the marker's HPEXPIRETIME through it (one round trip, one tracked key
// per user).
//
// HPTTL does not go through the cache. rueidis (v1.0.79) offers no cacheable HPTTL (its builder has
// no Cache() for it), and rightly: a cached HPTTL is a duration measured when the copy was filled,
// which a later hit would serve unchanged as time passes, sliding the idle end forward with every
// hit. The idle end is taken instead from what the copy holds, instants that only a write changes
// (and every write invalidates the copy): the session's last use (perUserLastSeen: its
// lastSeenAtMs, or its marker's expiry minus its idle timeout, or its createdAtMs) plus its idle
// timeout, never past its absolute deadline — the instant the field TTL was set to. The marker's
// expiry is such an instant too: its builder has no Cache() either (nor is it marked read-only), so
// its command is converted to a Cacheable; Redis tracks the key for it like for the HMGET (no
// second tracking entry: same key), and any change of the expiry is a write to the key, HPEXPIRE
// alone included, which invalidates both copies (an expiry that passes needs none: the gateway
// refuses a copy past its end). A hit that holds no live session answers missing at once: a session
// created later has a new id part, hence an HMGET never cached.
func (r perUserLayout) readTracked(ctx context.Context, ref session.Ref, view bool, mac string, now time.Time) (*session.AuthContext, error) {
	var v memoVersion
	if r.memo != nil {
		v = r.memo.version(ref)
	}
	wire := perUserViewNames(ref.Part)
	key := r.userKey(ref.Tag)
	both := r.client.DoMultiCache(ctx, rueidis.CT(r.client.B().Hmget().Key(key).Field(wire...).Cache(), r.cacheTTL),
		rueidis.CT(rueidis.Cacheable(r.markerExpiry(key, ref.Part)), r.cacheTTL))
	res := both[0]
	vals, hit, err := r.cachedArray(ctx, res)
	if err != nil {
		return nil, err
	}
	exp, err := fieldTTL(both[1])
	if err != nil {
		return nil, r.readErr(ctx, "session authorize", err)
	}
	m, size, _, err := perUserFields(vals, ref.Part, wire, nil, exp)
	if err != nil {
		return nil, fmt.Errorf("session authorize: %w", err)
	}
	if !hit {
		r.metrics.Payload(ctx, sessObject, size)
	}
	if _, ok := m[fieldAbsoluteExpires]; !ok {
		return nil, r.missing(ctx, ref)
	}
	return r.decideTracked(ctx, ref, m, v, res, view, mac, now)
}

// authorizeScript in the per-user layout (session_u_authorize.lua).
func (r perUserLayout) authorizeScript(ctx context.Context, ref session.Ref, view bool, mac string) (*session.AuthContext, error) {
	var v memoVersion
	if r.memo != nil {
		v = r.memo.version(ref)
	}
	wire, flat := perUserNames(ref.Part, view)
	start := r.now()
	args := make([]string, 0, 4+len(wire))
	args = append(args, ref.Part, r.fraction, r.idleMs, mac)
	args = append(args, wire...)
	rep, err := r.run(ctx, "session_u_authorize", scriptPerUserAuthorize, []string{r.userKey(ref.Tag)}, args)
	if err != nil {
		return nil, err
	}
	switch rep.Code() {
	case repo.CodeNotFound:
		return nil, r.missing(ctx, ref)
	case repo.CodeOK: // {'OK', nowMs, pttlMs, refreshed, absoluteExpiresAtMs, expireAtMs, <one value per field>}
	default:
		return nil, r.badReply(ctx, "session_u_authorize", rep.Unexpected())
	}
	d := rep.Reader()
	pttl, refreshed, abs, exp := d.Int(1), d.Int(2), d.Int(3), d.Int(4)
	if err := d.Err(); err != nil || rep.Len() < 6 {
		return nil, r.badReply(ctx, "session_u_authorize", fmt.Errorf("session_u_authorize: short or malformed reply: %v", err))
	}
	m, size, pooled, err := perUserFields(rep.Values(5), ref.Part, wire, flat, exp)
	if err != nil {
		return nil, r.badReply(ctx, "session_u_authorize", fmt.Errorf("session_u_authorize: %w", err))
	}
	if pooled {
		defer repo.ReleaseFields(m)
	}
	r.metrics.Payload(ctx, sessObject, size)
	return r.scriptAnswer(ctx, ref, m, view, scriptRead{pttl: pttl, refreshed: refreshed == 1, abs: abs, start: start, v: v, mac: mac})
}

// get is Get in the per-user layout: the view's fields of the user's hash and the session's
// idle end in one round trip (plainRead).
func (r perUserLayout) get(ctx context.Context, ref session.Ref, tenant string) (*session.Session, error) {
	wire := perUserViewNames(ref.Part)
	p, err := r.plainRead(ctx, "session get", ref, wire, true)
	if err != nil {
		return nil, err
	}
	if p.pttl == -2 {
		r.metrics.Read(ctx, sessObject, repo.Missing)
		return nil, fmt.Errorf("session %s: %w", ref.ID(), apperr.NotFound)
	}
	m, size, _, err := perUserFields(p.vals, ref.Part, wire, nil, p.exp)
	if err != nil {
		return nil, fmt.Errorf("session get: %w", err)
	}
	r.metrics.Payload(ctx, sessObject, size)
	s, err := r.parseView(ctx, ref, m, time.Now().UnixMilli(), p.pttl)
	if err != nil {
		return nil, err
	}
	if s.TenantID != tenant {
		return nil, fmt.Errorf("session %s: %w", ref.ID(), apperr.NotFound)
	}
	r.classifyChallenge(ctx, s, m)
	return s, nil
}

// keyPattern names the key holding a session in logs, in the layout in use.
func (r *Sessions) keyPattern() string { return r.layout.keyPattern() }

func (r perUserLayout) keyPattern() string    { return r.userKeyPattern() }
func (r perSessionLayout) keyPattern() string { return r.sessionKeyPattern() }
