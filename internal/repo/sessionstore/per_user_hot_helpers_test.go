package sessionstore

import (
	"time"

	"strconv"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/testredis"
)

// More layout-aware test helpers (per_user_helpers_test.go has the first ones), for the hot
// path's tests.

// sessTTLNames are the session's fields that share its idle deadline, as its key names them
// (per user: "<part>:<name>" of every field but the challenge's).
func (e *sessEnv) sessTTLNames(ref session.Ref) []string {
	var names []string
	for _, n := range sessPartFields {
		if n != fieldChallengeID && n != fieldCodeMAC {
			names = append(names, partField(ref.Part, n))
		}
	}
	return names
}

// sessExpireAt makes the session's idle window end at the Unix instant ms (PEXPIREAT of its
// hash, or HPEXPIREAT of every field that shares the session's TTL).
func (e *sessEnv) sessExpireAt(ref session.Ref, ms int64) {
	e.t.Helper()
	var cmd rueidis.Completed
	if !e.r.perUser() {
		cmd = e.s.Client.B().Pexpireat().Key(e.r.sessionKey(ref)).MillisecondsTimestamp(ms).Build()
	} else {
		names := e.sessTTLNames(ref)
		cmd = e.s.Client.B().Arbitrary("HPEXPIREAT").Keys(e.r.userKey(ref.Tag)).
			Args(append([]string{strconv.FormatInt(ms, 10), "FIELDS", strconv.Itoa(len(names))}, names...)...).Build()
	}
	if err := e.do(cmd).Error(); err != nil {
		e.t.Fatal(err)
	}
}

// sessSetKeep is sessSet keeping the session's idle deadline on the field in the per-user
// layout (HSET drops a field's TTL: it is set again to the session's marker's).
func (e *sessEnv) sessSetKeep(ref session.Ref, field, value string) {
	e.t.Helper()
	var ttl int64
	if e.r.perUser() {
		ttl = e.sessPTTL(ref)
	}
	e.sessSet(ref, field, value)
	if e.r.perUser() && ttl > 0 {
		e.do(e.s.Client.B().Arbitrary("HPEXPIRE").Keys(e.r.userKey(ref.Tag)).
			Args(strconv.FormatInt(ttl, 10), "FIELDS", "1", e.sessField(ref, field)).Build())
	}
}

// sessDelete ends the session as a revocation does (DEL of its hash, or HDEL of its fields).
func (e *sessEnv) sessDelete(ref session.Ref) {
	e.t.Helper()
	cmd := e.s.Client.B().Del().Key(e.r.sessionKey(ref)).Build()
	if e.r.perUser() {
		cmd = e.s.Client.B().Hdel().Key(e.r.userKey(ref.Tag)).Field(partFields(ref.Part, sessPartFields)...).Build()
	}
	if err := e.do(cmd).Error(); err != nil {
		e.t.Fatal(err)
	}
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
			if e.r.perUser() {
				n += len(c.Args) - 8 // EVALSHA sha 1 userKey part fraction idle mac field...
			} else {
				n += len(c.Args) - 7 // EVALSHA sha 1 key fraction idle mac field...
			}
		case "HPTTL":
			if len(c.Args) != 5 { // HPTTL key FIELDS 1 <part>:absoluteExpiresAtMs
				e.t.Fatalf("HPTTL of more than the marker: %v", c)
			}
		case "HGETALL", "HGET", "HGETEX":
			e.t.Fatalf("a read of more than the fields it needs, or one at a time: %v", c)
		}
	}
	return n
}

// sessViewRead is how many fields a read of the view asks for in the layout in use: the
// view's, plus (per user) the hash's createdAtMs, the default of the session's.
func (e *sessEnv) sessViewRead() int {
	if e.r.perUser() {
		return len(sessViewFields) + 1
	}
	return len(sessViewFields)
}

// sessWriteRaw writes a session's hash by hand, as a gateway of either layout would hold it:
// user are the user's fields (userId, tenantId, schemaVersion, ...), own the session's; in the
// per-session layout both go into the session's hash. Everything lives ttlMs (the session's
// fields share that field TTL per user, as its idle window; the user's hash's TTL is only
// raised to it).
func (e *sessEnv) sessWriteRaw(ref session.Ref, user, own map[string]string, ttlMs int64) {
	e.t.Helper()
	key := e.sessKey(ref)
	set := e.s.Client.B().Hset().Key(key).FieldValue()
	var names []string
	for k, v := range user {
		set = set.FieldValue(k, v)
	}
	for k, v := range own {
		set = set.FieldValue(e.sessField(ref, k), v)
		names = append(names, e.sessField(ref, k))
	}
	ms := strconv.FormatInt(ttlMs, 10)
	cmds := []rueidis.Completed{set.Build(), e.s.Client.B().Pexpire().Key(key).Milliseconds(ttlMs).Build()}
	if e.r.perUser() { // the user's hash: its TTL is raised, never shortened
		cmds[1] = e.s.Client.B().Pexpire().Key(key).Milliseconds(ttlMs).Nx().Build()
		cmds = append(cmds, e.s.Client.B().Pexpire().Key(key).Milliseconds(ttlMs).Gt().Build())
	}
	if e.r.perUser() && len(names) > 0 {
		cmds = append(cmds, e.s.Client.B().Arbitrary("HPEXPIRE").Keys(key).
			Args(append([]string{ms, "FIELDS", strconv.Itoa(len(names))}, names...)...).Build())
	}
	for _, c := range cmds {
		if err := e.do(c).Error(); err != nil {
			e.t.Fatal(err)
		}
	}
}

// sessWrongType puts a string where the session's key belongs (its hash, or the user's) and
// returns that key (the caller deletes it: the keyspace audit checks every key left).
func (e *sessEnv) sessWrongType(ref session.Ref) string {
	e.t.Helper()
	key := e.sessKey(ref)
	if err := e.do(e.s.Client.B().Set().Key(key).Value("x").Px(time.Minute).Build()).Error(); err != nil {
		e.t.Fatal(err)
	}
	return key
}

// sessMissCmds are the commands of a view read (Authorize) that misses the memo and reaches
// Redis, in the layout in use: broadcast tracking reads plainly (HMGET and the key's PTTL, or
// the session's HPTTL and the marker's HPEXPIRETIME per user), default tracking through
// rueidis' cache (an HMGET; per user with the marker's HPEXPIRETIME).
func (e *sessEnv) sessMissCmds(broadcast bool) []string {
	switch {
	case broadcast && e.r.perUser():
		return []string{"HMGET", "HPTTL", "HPEXPIRETIME"}
	case broadcast:
		return []string{"HMGET", "PTTL"}
	case e.r.perUser():
		return []string{"HMGET", "HPEXPIRETIME"}
	}
	return []string{"HMGET"}
}

// sessFieldTTLs are the field TTLs (ms, HPTTL) of every field the session holds that shares its
// idle deadline, by name; nil in the per-session layout (the key's TTL is the session's).
func (e *sessEnv) sessFieldTTLs(ref session.Ref) map[string]int64 {
	e.t.Helper()
	if !e.r.perUser() {
		return nil
	}
	names := e.sessTTLNames(ref)
	v, err := e.do(e.s.Client.B().Hpttl().Key(e.r.userKey(ref.Tag)).Fields().Numfields(int64(len(names))).
		Field(names...).Build()).AsIntSlice()
	if err != nil || len(v) != len(names) {
		e.t.Fatalf("HPTTL: %v %v", v, err)
	}
	out := map[string]int64{}
	for i, n := range names {
		if v[i] != -2 {
			out[n] = v[i]
		}
	}
	return out
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

// sessAuthorizeScript names the layout's authorize script (in script-error metrics).
func (e *sessEnv) sessAuthorizeScript() string {
	if e.r.perUser() {
		return "session_u_authorize"
	}
	return "session_authorize"
}
