package sessionstore

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/testredis"
)

// storedForm is how the tests look at and write a session as the layout under test stores it,
// in the store's own shape: perSessionForm (the session's hash and its key TTL) or perUserForm
// (the session's fields "<part>:<name>" in the user's hash, and their field TTLs). newSessEnv
// picks one with the layout; sessEnv embeds it, so a test asks e.sessPTTL(ref) and never which
// layout it runs in.
type storedForm interface {
	// sessKey is the key holding the session: its hash, or the user's.
	sessKey(ref session.Ref) string
	// sessField is the name field takes for the session in its key. The user's own fields
	// (userId, tenantId, schemaVersion) are not the session's per user: name them directly.
	// Per user, createdAtMs, absoluteExpiresAtMs and verifierMac are all the live marker.
	sessField(ref session.Ref, field string) string
	// sessStoreValue is what value becomes in sessField(ref, field): per user, a creation, a
	// deadline or a MAC joined with the rest of the session's live marker.
	sessStoreValue(ref session.Ref, field, value string) string
	// sessLoadValue is field's value from what sessField(ref, field) holds.
	sessLoadValue(field, stored string) string
	// sessPTTL is the end of the session's idle window in ms (PTTL of its hash, HPTTL of its
	// marker), -2 when the session does not exist.
	sessPTTL(ref session.Ref) int64
	// sessExpire and sessExpireAt end the session's idle window in ms, or at the Unix instant
	// ms (its hash's TTL, or the field TTL of every field that shares the session's).
	sessExpire(ref session.Ref, ms int64)
	sessExpireAt(ref session.Ref, ms int64)
	// sessSetKeep writes the session's field as stored, keeping its idle deadline on it.
	sessSetKeep(ref session.Ref, field, value string)
	// sessDelete ends the session as a revocation does (DEL of its hash, or HDEL of its fields).
	sessDelete(ref session.Ref)
	// sessStored is the session's fields as stored, unprefixed, without the per-user layout's
	// defaults or the user's fields: what the writes wrote for the session itself.
	sessStored(ref session.Ref) map[string]string
	// sessWriteRaw writes a session by hand, as a gateway of the layout would hold it: user are
	// the user's fields (userId, tenantId, schemaVersion, ...), own the session's. Everything
	// lives ttlMs (per user: the session's fields as their field TTL, the user's hash's TTL
	// only raised to it).
	sessWriteRaw(ref session.Ref, user, own map[string]string, ttlMs int64)
	// sessFieldTTLs are the field TTLs (ms) of every field the session holds that shares its
	// idle deadline, by name; nil per session (the key's TTL is the session's).
	sessFieldTTLs(ref session.Ref) map[string]int64
	// sessScriptArgs is how many arguments of an authorize EVALSHA precede the fields it
	// answers with.
	sessScriptArgs() int
	// sessViewRead is how many fields a read of the view asks for: the view's (per user the
	// live marker holds three of them).
	sessViewRead() int
	// sessMissCmds are the commands of a view read that misses the memo and reaches Redis:
	// broadcast tracking reads plainly, default tracking through rueidis' cache.
	sessMissCmds(broadcast bool) []string
	// sessAuthorizeScript names the layout's authorize script (in script-error metrics).
	sessAuthorizeScript() string
	// sessLayoutName names the layout, in messages.
	sessLayoutName() string
	// sessDrop ends the session the way a crash between two non-atomic steps or an idle expiry
	// that raced a read would leave it: its hash deleted (the device index keeps its member),
	// or its live marker deleted from the user's hash (its other fields stay behind).
	sessDrop(ref session.Ref)
	// liveParts are the id parts of the user's sessions as the layout keeps them: the device
	// index's members (which may include ended sessions until pruned), or the parts whose live
	// marker is in the user's hash.
	liveParts(tag string) []string
	// sessFieldsShareTTL fails unless every field of the session but the live challenge's
	// carries the session's TTL, and the challenge's at most that, the key outliving them all
	// (per user; per session the key's TTL is every field's).
	sessFieldsShareTTL(ref session.Ref)
	// sessSpoil makes the session unreadable as its layout can hold it: a string in place of
	// its hash, or values that do not parse in its fields.
	sessSpoil(ref session.Ref)
	// sessMigration is how the user's keys move with their slot (TestSessionIndexDuringSlotMigration).
	sessMigration() sessMigrationShape
	// sessSent fails unless cmds are what the layout sends for op ("list", "revoke-all"): per
	// user the script alone (one round trip); per session a list reads the device index
	// (ZRANGE) and prunes its expired member.
	sessSent(op string, cmds []string)
}

// sessMigrationShape is how a layout's keys of one user move with their slot.
type sessMigrationShape struct {
	split  bool // several keys: while some have moved, a call may be refused as unavailable
	oneKey bool // one key: the checks run before it moves too, while the slot migrates
	rotate bool // rotation and a challenge run at every step (nothing may be refused)
	// revokeAt: after n of count keys moved, a revoke-all is sent (per session: index on the
	// old owner, then on the new one; per user: the hash moved).
	revokeAt func(n, count int) bool
}

// newStoredForm is the storedForm of e's layout.
func newStoredForm(e *sessEnv) storedForm {
	if _, ok := e.r.layout.(perUserLayout); ok {
		return perUserForm{e}
	}
	return perSessionForm{e}
}

// perSessionForm: one hash per session, its key's TTL the idle window.
type perSessionForm struct{ e *sessEnv }

func (f perSessionForm) sessKey(ref session.Ref) string                   { return f.e.r.sessionKey(ref) }
func (f perSessionForm) sessField(_ session.Ref, name string) string      { return name }
func (f perSessionForm) sessStoreValue(_ session.Ref, _, v string) string { return v }
func (f perSessionForm) sessLoadValue(_, stored string) string            { return stored }
func (f perSessionForm) sessPTTL(ref session.Ref) int64                   { return f.e.pttl(f.sessKey(ref)) }

func (f perSessionForm) sessExpire(ref session.Ref, ms int64) {
	f.e.must(f.e.s.Client.B().Pexpire().Key(f.sessKey(ref)).Milliseconds(ms).Build())
}

func (f perSessionForm) sessExpireAt(ref session.Ref, ms int64) {
	f.e.must(f.e.s.Client.B().Pexpireat().Key(f.sessKey(ref)).MillisecondsTimestamp(ms).Build())
}

func (f perSessionForm) sessSetKeep(ref session.Ref, field, value string) {
	f.e.sessSet(ref, field, value)
}
func (f perSessionForm) sessDelete(ref session.Ref) {
	f.e.must(f.e.s.Client.B().Del().Key(f.sessKey(ref)).Build())
}
func (f perSessionForm) sessStored(ref session.Ref) map[string]string {
	return f.e.hgetall(f.sessKey(ref))
}

func (f perSessionForm) sessWriteRaw(ref session.Ref, user, own map[string]string, ttlMs int64) {
	key := f.sessKey(ref)
	set := f.e.s.Client.B().Hset().Key(key).FieldValue()
	for _, m := range []map[string]string{user, own} {
		for k, v := range m {
			set = set.FieldValue(k, v)
		}
	}
	f.e.must(set.Build())
	f.e.must(f.e.s.Client.B().Pexpire().Key(key).Milliseconds(ttlMs).Build())
}

func (f perSessionForm) sessFieldTTLs(session.Ref) map[string]int64 { return nil }
func (f perSessionForm) sessScriptArgs() int                        { return 7 } // EVALSHA sha 1 key fraction idle mac
func (f perSessionForm) sessViewRead() int                          { return len(sessViewFields) }
func (f perSessionForm) sessAuthorizeScript() string                { return "session_authorize" }

func (f perSessionForm) sessMissCmds(broadcast bool) []string {
	if broadcast {
		return []string{"HMGET", "PTTL"}
	}
	return []string{"HMGET"}
}

func (f perSessionForm) sessMigration() sessMigrationShape {
	return sessMigrationShape{split: true, revokeAt: func(n, count int) bool { return n == count/2 || n == count/2+2 }}
}

func (f perSessionForm) sessSent(op string, cmds []string) {
	f.e.t.Helper()
	if op == "list" && (!slices.Contains(cmds, "ZRANGE") || f.e.metric("hashgate_repo_transitions", sessAttr("transition", "index_prune")) != 1) {
		f.e.t.Fatalf("per-session list sent %v: want the index read and the expired member pruned", cmds)
	}
}

func (f perSessionForm) sessLayoutName() string         { return "per-session" }
func (f perSessionForm) sessDrop(ref session.Ref)       { f.sessDelete(ref) }
func (f perSessionForm) sessFieldsShareTTL(session.Ref) {}

func (f perSessionForm) liveParts(tag string) []string {
	parts, err := f.e.r.members(context.Background(), tag, -1)
	if err != nil {
		f.e.t.Fatal(err)
	}
	return parts
}

func (f perSessionForm) sessSpoil(ref session.Ref) {
	f.sessDelete(ref)
	f.e.must(f.e.s.Client.B().Set().Key(f.sessKey(ref)).Value("x").Px(time.Hour).Build())
}

// perUserForm: the session's fields in the user's hash, each with the idle window as its field
// TTL (the challenge's two keep their own); the hash's TTL is only ever raised.
type perUserForm struct{ e *sessEnv }

func (f perUserForm) sessKey(ref session.Ref) string { return f.e.r.userKey(ref.Tag) }
func (f perUserForm) sessField(ref session.Ref, name string) string {
	if inLive(name) {
		name = fieldLive
	}
	return partField(ref.Part, name)
}

// inLive: the live marker holds the session's createdAtMs, absoluteExpiresAtMs and verifierMac.
func inLive(name string) bool {
	return name == fieldCreatedAt || name == fieldAbsoluteExpires || name == fieldVerifierMAC
}

func (f perUserForm) sessStoreValue(ref session.Ref, field, v string) string {
	if !inLive(field) {
		return v
	}
	m := map[string]string{fieldLive: f.e.hget(f.sessKey(ref), partField(ref.Part, fieldLive))}
	splitLive(m)
	m[field] = v
	return liveOf(m)
}

func (f perUserForm) sessLoadValue(field, stored string) string {
	if !inLive(field) {
		return stored
	}
	m := map[string]string{fieldLive: stored}
	splitLive(m)
	return m[field]
}

// liveOf is the live marker holding m's createdAtMs, verifierMac and absoluteExpiresAtMs (the
// deadline left out when it is the implicit one; without a MAC, an empty one: a marker its
// readers refuse).
func liveOf(m map[string]string) string {
	v := m[fieldCreatedAt] + liveSep + m[fieldVerifierMAC]
	if abs, ok := m[fieldAbsoluteExpires]; ok && (abs != strconv.FormatInt(sessAtoi(m[fieldCreatedAt])+ImplicitAbsolute.Milliseconds(), 10) ||
		m[fieldVerifierMAC] == "") {
		v += liveSep + abs
	}
	return v
}

func (f perUserForm) sessPTTL(ref session.Ref) int64 {
	return f.e.fieldTTLs(f.sessKey(ref), partField(ref.Part, fieldLive))[0]
}

// sessTTLNames are the session's fields that share its idle deadline, as the user's hash names
// them: every field but the challenge's.
func (f perUserForm) sessTTLNames(ref session.Ref) []string {
	var names []string
	for _, n := range sessPartFields {
		if !slices.Contains(sessChallengeFields, n) {
			names = append(names, partField(ref.Part, n))
		}
	}
	return names
}

// fieldTTL runs cmd ("HPEXPIRE" or "HPEXPIREAT") at t on the fields names of the session's key.
func (f perUserForm) fieldTTL(ref session.Ref, cmd string, t int64, names ...string) {
	f.e.must(f.e.s.Client.B().Arbitrary(cmd).Keys(f.sessKey(ref)).
		Args(append([]string{strconv.FormatInt(t, 10), "FIELDS", strconv.Itoa(len(names))}, names...)...).Build())
}

func (f perUserForm) sessExpire(ref session.Ref, ms int64) {
	f.fieldTTL(ref, "HPEXPIRE", ms, f.sessTTLNames(ref)...)
}

func (f perUserForm) sessExpireAt(ref session.Ref, ms int64) {
	f.fieldTTL(ref, "HPEXPIREAT", ms, f.sessTTLNames(ref)...)
}

// sessSetKeep: HSET drops a field's TTL, so it is set again to the session's marker's.
func (f perUserForm) sessSetKeep(ref session.Ref, field, value string) {
	ttl := f.sessPTTL(ref)
	f.e.sessSet(ref, field, value)
	if ttl > 0 {
		f.fieldTTL(ref, "HPEXPIRE", ttl, f.sessField(ref, field))
	}
}

func (f perUserForm) sessDelete(ref session.Ref) {
	f.e.must(f.e.s.Client.B().Hdel().Key(f.sessKey(ref)).Field(partFields(ref.Part, sessPartFields)...).Build())
}

func (f perUserForm) sessStored(ref session.Ref) map[string]string {
	out := f.sessStoredRaw(ref)
	splitLive(out)
	return out
}

// sessStoredRaw is sessStored with the live marker as stored.
func (f perUserForm) sessStoredRaw(ref session.Ref) map[string]string {
	out := map[string]string{}
	for k, v := range f.e.hgetall(f.sessKey(ref)) {
		if name, ok := strings.CutPrefix(k, ref.Part+":"); ok {
			out[name] = v
		}
	}
	return out
}

func (f perUserForm) sessWriteRaw(ref session.Ref, user, own map[string]string, ttlMs int64) {
	key := f.sessKey(ref)
	set := f.e.s.Client.B().Hset().Key(key).FieldValue()
	var names []string
	for k, v := range user {
		set = set.FieldValue(k, v)
	}
	own = maps.Clone(own)
	if _, ok := own[fieldAbsoluteExpires]; ok {
		own[fieldLive] = liveOf(own)
	}
	delete(own, fieldCreatedAt)
	delete(own, fieldAbsoluteExpires)
	delete(own, fieldVerifierMAC)
	for k, v := range own {
		set = set.FieldValue(f.sessField(ref, k), v)
		names = append(names, f.sessField(ref, k))
	}
	f.e.must(set.Build())
	// The user's hash: its TTL is raised, never shortened.
	f.e.must(f.e.s.Client.B().Pexpire().Key(key).Milliseconds(ttlMs).Nx().Build())
	f.e.must(f.e.s.Client.B().Pexpire().Key(key).Milliseconds(ttlMs).Gt().Build())
	if len(names) > 0 {
		f.fieldTTL(ref, "HPEXPIRE", ttlMs, names...)
	}
}

func (f perUserForm) sessFieldTTLs(ref session.Ref) map[string]int64 {
	names := f.sessTTLNames(ref)
	v := f.e.fieldTTLs(f.sessKey(ref), names...)
	out := map[string]int64{}
	for i, n := range names {
		if v[i] != -2 {
			out[n] = v[i]
		}
	}
	return out
}

func (f perUserForm) sessScriptArgs() int         { return 8 }                       // EVALSHA sha 1 userKey part fraction idle mac
func (f perUserForm) sessViewRead() int           { return len(sessViewFields) - 2 } // the marker: createdAtMs, absoluteExpiresAtMs, verifierMac
func (f perUserForm) sessAuthorizeScript() string { return "session_u_authorize" }

func (f perUserForm) sessMissCmds(broadcast bool) []string {
	if broadcast {
		return []string{"HMGET", "HPTTL", "HPEXPIRETIME"}
	}
	return []string{"HMGET", "HPEXPIRETIME"}
}

// Layout-free helpers over the stored form.

// sessGet is the session's field as stored ("" when absent; no default applied).
func (e *sessEnv) sessGet(ref session.Ref, field string) string {
	e.t.Helper()
	return e.sessLoadValue(field, e.hget(e.sessKey(ref), e.sessField(ref, field)))
}

// sessSet writes the session's field as stored (the field keeps or gets no TTL of its own: in
// the per-user layout a new field written this way has none, use sessExpire after).
func (e *sessEnv) sessSet(ref session.Ref, field, value string) {
	e.t.Helper()
	name := e.sessField(ref, field)
	e.must(e.s.Client.B().Hset().Key(e.sessKey(ref)).FieldValue().FieldValue(name, e.sessStoreValue(ref, field, value)).Build())
	if strings.HasPrefix(name, ref.Part+":") {
		// The per-user layout: a session's field carries a field TTL, as every script that
		// writes one gives it (the keyspace audit checks it on the keys the tests leave).
		e.must(e.s.Client.B().Hpexpire().Key(e.sessKey(ref)).Milliseconds(600_000).Fields().Numfields(1).Field(name).Build())
	}
}

// sessWriteKV is sessWriteRaw of field, value pairs in the per-session hash's names: userId,
// tenantId and schemaVersion are the user's fields, the others the session's.
func (e *sessEnv) sessWriteKV(ref session.Ref, ttlMs int64, kv ...string) {
	e.t.Helper()
	user, own := map[string]string{}, map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		switch kv[i] {
		case fieldUserID, fieldTenantID, fieldSchemaVersion:
			user[kv[i]] = kv[i+1]
		default:
			own[kv[i]] = kv[i+1]
		}
	}
	e.sessWriteRaw(ref, user, own, ttlMs)
}

// sessWrongType puts a string where the session's key belongs (its hash, or the user's) and
// returns that key (the caller deletes it: the keyspace audit checks every key left).
func (e *sessEnv) sessWrongType(ref session.Ref) string {
	e.t.Helper()
	key := e.sessKey(ref)
	e.must(e.s.Client.B().Set().Key(key).Value("x").Px(time.Minute).Build())
	return key
}

// sessFieldsRead is how many hash fields the recorded commands asked Redis for: the values of
// an HMGET and the fields an authorize script answers with (HPTTL names the session's marker
// for its TTL: not counted, but it must name that one field alone). It fails on a command that
// reads a whole hash or one field at a time.
func (e *sessEnv) sessFieldsRead(cmds []testredis.Command) int {
	e.t.Helper()
	n := 0
	for _, c := range cmds {
		switch c.Name() {
		case "HMGET":
			n += len(c.Args) - 2 // HMGET key field...
		case "EVALSHA", "EVAL":
			n += len(c.Args) - e.sessScriptArgs()
		case "HPTTL":
			if len(c.Args) != 5 { // HPTTL key FIELDS 1 <part>:live
				e.t.Fatalf("HPTTL of more than the marker: %v", c)
			}
		case "HGETALL", "HGET", "HGETEX":
			e.t.Fatalf("a read of more than the fields it needs, or one at a time: %v", c)
		}
	}
	return n
}

// fieldTTLs is HPTTL of fields of key (-2 absent, -1 no TTL).
func (e *sessEnv) fieldTTLs(key string, fields ...string) []int64 {
	e.t.Helper()
	v, err := e.do(e.s.Client.B().Arbitrary("HPTTL").Keys(key).
		Args(append([]string{"FIELDS", strconv.Itoa(len(fields))}, fields...)...).Build()).AsIntSlice()
	if err != nil || len(v) != len(fields) {
		e.t.Fatalf("HPTTL %v: %v %v", fields, v, err)
	}
	return v
}

// must runs cmd and fails the test on an error.
func (e *sessEnv) must(cmd rueidis.Completed) {
	e.t.Helper()
	if err := e.do(cmd).Error(); err != nil {
		e.t.Fatal(err)
	}
}

// hgetall is HGETALL of key.
func (e *sessEnv) hgetall(key string) map[string]string {
	e.t.Helper()
	m, err := e.do(e.s.Client.B().Hgetall().Key(key).Build()).AsStrMap()
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

func (f perUserForm) sessLayoutName() string { return "per-user" }

func (f perUserForm) sessDrop(ref session.Ref) {
	f.e.must(f.e.s.Client.B().Hdel().Key(f.sessKey(ref)).Field(partField(ref.Part, fieldLive)).Build())
}

func (f perUserForm) liveParts(tag string) []string {
	names, err := f.e.do(f.e.s.Client.B().Hkeys().Key(f.e.r.userKey(tag)).Build()).AsStrSlice()
	if err != nil {
		f.e.t.Fatal(err)
	}
	var parts []string
	for _, n := range names {
		if p, ok := strings.CutSuffix(n, ":"+fieldLive); ok {
			parts = append(parts, p)
		}
	}
	slices.Sort(parts)
	return parts
}

func (f perUserForm) sessFieldsShareTTL(ref session.Ref) {
	e := f.e
	e.t.Helper()
	st := f.sessStoredRaw(ref)
	names := make([]string, 0, len(st))
	for n := range st {
		names = append(names, n)
	}
	slices.Sort(names)
	mark := slices.Index(names, fieldLive)
	if mark < 0 {
		e.t.Fatalf("session %s has no live marker: %v", ref.Part, st)
	}
	ttls := e.fieldTTLs(f.sessKey(ref), partFields(ref.Part, names)...)
	idle := ttls[mark] // read in the same command as the others
	for i, n := range names {
		switch {
		case slices.Contains(sessChallengeFields, n):
			if ttls[i] <= 0 || ttls[i] > idle {
				e.t.Fatalf("challenge field %s: TTL %d ms, session's %d ms", n, ttls[i], idle)
			}
		case ttls[i] > idle || ttls[i] < idle-2000:
			e.t.Fatalf("field %s: TTL %d ms, want the session's %d ms (all: %v %v)", n, ttls[i], idle, names, ttls)
		}
	}
	if p := e.pttl(f.sessKey(ref)); p < idle {
		e.t.Fatalf("the user's hash (pttl %d) ends before the session's fields (%d)", p, idle)
	}
}

func (f perUserForm) sessSpoil(ref session.Ref) {
	f.e.sessSet(ref, fieldCreatedAt, "x")
	f.e.sessSet(ref, fieldLastSeenAt, "y")
	f.sessExpire(ref, time.Hour.Milliseconds())
}

func (f perUserForm) sessMigration() sessMigrationShape {
	return sessMigrationShape{oneKey: true, rotate: true, revokeAt: func(n, _ int) bool { return n == 1 }}
}

func (f perUserForm) sessSent(op string, cmds []string) {
	f.e.t.Helper()
	if !slices.Equal(cmds, []string{"EVALSHA"}) {
		f.e.t.Fatalf("per-user %s sent %v, want the script alone (one round trip)", op, cmds)
	}
}

// partFields names a session's fields in the user's hash.
func partFields(part string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = partField(part, n)
	}
	return out
}
