package sessionstore

import (
	"slices"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/sessions/session"
)

// Layout-aware test helpers: the same question about one session in either layout (the
// per-session hash and its key TTL, or the session's fields in the user's hash and their field
// TTLs).

// sessPTTL is what PTTL of the session's hash is in the per-session layout: the end of its idle
// window in ms, -2 when the session does not exist.
func (e *sessEnv) sessPTTL(ref session.Ref) int64 {
	e.t.Helper()
	if !e.r.perUser() {
		return e.pttl(e.r.sessionKey(ref))
	}
	v, err := e.do(e.s.Client.B().Arbitrary("HPTTL").Keys(e.r.userKey(ref.Tag)).
		Args("FIELDS", "1", partField(ref.Part, fieldAbsoluteExpires)).Build()).AsIntSlice()
	if err != nil {
		e.t.Fatal(err)
	}
	if len(v) != 1 {
		e.t.Fatalf("HPTTL: %v", v)
	}
	return v[0]
}

// sessExpire sets the session's idle window to end in ms (PEXPIRE of its hash, or HPEXPIRE of
// every field that shares the session's TTL).
func (e *sessEnv) sessExpire(ref session.Ref, ms int64) {
	e.t.Helper()
	var cmd rueidis.Completed
	if !e.r.perUser() {
		cmd = e.s.Client.B().Pexpire().Key(e.r.sessionKey(ref)).Milliseconds(ms).Build()
	} else {
		var names []string
		for _, n := range sessPartFields {
			if !slices.Contains(sessChallengeFields, n) {
				names = append(names, partField(ref.Part, n))
			}
		}
		cmd = e.s.Client.B().Arbitrary("HPEXPIRE").Keys(e.r.userKey(ref.Tag)).
			Args(append([]string{strconv.FormatInt(ms, 10), "FIELDS", strconv.Itoa(len(names))}, names...)...).Build()
	}
	if err := e.do(cmd).Error(); err != nil {
		e.t.Fatal(err)
	}
}

// sessKey is the key holding the session: its hash, or the user's.
func (e *sessEnv) sessKey(ref session.Ref) string {
	if e.r.perUser() {
		return e.r.userKey(ref.Tag)
	}
	return e.r.sessionKey(ref)
}

// sessField is the name field takes for the session in its key ("<part>:<field>" per user).
// The user's own fields (userId, tenantId, schemaVersion) are not the session's in the
// per-user layout: name them directly.
func (e *sessEnv) sessField(ref session.Ref, field string) string {
	if e.r.perUser() {
		return partField(ref.Part, field)
	}
	return field
}

// sessGet is the session's field as stored ("" when absent; no default applied).
func (e *sessEnv) sessGet(ref session.Ref, field string) string {
	e.t.Helper()
	return e.hget(e.sessKey(ref), e.sessField(ref, field))
}

// sessSet writes the session's field as stored (the field keeps or gets no TTL of its own: in
// the per-user layout a new field written this way has none, use sessExpire after).
func (e *sessEnv) sessSet(ref session.Ref, field, value string) {
	e.t.Helper()
	if err := e.do(e.s.Client.B().Hset().Key(e.sessKey(ref)).FieldValue().
		FieldValue(e.sessField(ref, field), value).Build()).Error(); err != nil {
		e.t.Fatal(err)
	}
}

// sessStored is the session's fields as stored, unprefixed, without the per-user layout's
// defaults or the user's fields: what the write wrote for the session itself.
func (e *sessEnv) sessStored(ref session.Ref) map[string]string {
	e.t.Helper()
	m, err := e.do(e.s.Client.B().Hgetall().Key(e.sessKey(ref)).Build()).AsStrMap()
	if err != nil {
		e.t.Fatal(err)
	}
	if !e.r.perUser() {
		return m
	}
	out := map[string]string{}
	for k, v := range m {
		if name, ok := strings.CutPrefix(k, ref.Part+":"); ok {
			out[name] = v
		}
	}
	return out
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
