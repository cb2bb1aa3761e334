package sessionstore

import (
	"slices"
	"strings"
)

// The per-user layout (LayoutPerUser; docs/KEYS.md, "Sessions"). A user's sessions live in one
// hash, <prefix>:v1:sess:{<userTag>}:
//
//   - the user's fields, once and without a field TTL: userId, tenantId, schemaVersion,
//     createdAtMs (when the hash was created), updatedAtMs (the last write to any session);
//   - each session's fields as "<idPart>:<name>", every one with the session's idle deadline
//     (never past its absolute deadline) as its field TTL, except the live MFA challenge's
//     (mfaChallengeId, mfaCodeMac: their own, shorter). "<idPart>:live" is always present: it
//     marks the session as live, its field TTL is the end of the idle window (what PTTL of a
//     per-session hash is), and its value is "<absoluteExpiresAtMs>.<verifierMac>" (one field
//     for two: a field of its own costs a session about 64 B of Redis). The other names are the
//     per-session hash's (sessions_fields.go), written under the same rule (only once they
//     differ from their default), with two more defaults: "<idPart>:createdAtMs" is the hash's
//     createdAtMs when absent, "<idPart>:updatedAtMs" the session's createdAtMs;
//   - with session events on, the user's pending events: evSeq, evHead, ev.<n> (the kit's
//     snippet event_outbox; no ':' in their names, so never a session's field), each event with
//     the events' max age as its field TTL, until the relay copies and deletes them
//     (internal/repo/eventstore);
//   - the key's own TTL is raised (never shortened) to the latest absolute deadline of any
//     session it received, and to the events' max age by an event appended, so it outlives
//     every field.
//
// Every per-user script declares the user's hash alone (verify adds the MFA attempt counter, in
// the same slot): a single-key script is served while the user's slot migrates between cluster
// nodes, rueidis following ASK.

// sessPartFields are the names a session's fields take in the user's hash (after "<idPart>:"):
// HDEL of a session and HPEXPIRE of an idle refresh name them all. The scripts that need the
// list include the snippet session_fields, written from it (sessPartFieldsLua, scripts.go).
var sessPartFields = []string{fieldLive, fieldCreatedAt, fieldUpdatedAt, fieldStatus, fieldAuthLevel, fieldLastSeenAt,
	fieldLastRotatedAt, fieldMFAVerifiedAt, fieldIdleTimeout, fieldDeviceLabel, fieldIPHash, fieldUserAgentHash, fieldFailedMFA,
	fieldLoginPending, fieldGroups, fieldChallengeAt, fieldChallengeID, fieldCodeMAC}

// sessChallengeFields keep their own TTL (the challenge's): an idle refresh does not extend them.
var sessChallengeFields = []string{fieldChallengeID, fieldCodeMAC}

// sessUserFields are the user's own fields in the user's hash.
var sessUserFields = []string{fieldUserID, fieldTenantID, fieldSchemaVersion, fieldCreatedAt, fieldUpdatedAt}

// sessPartFieldsLua is the snippet session_fields: SESSION_FIELDS (every name),
// SESSION_TTL_FIELDS (those an idle refresh extends), LIVE (the live marker's name) and
// SESSION_USER_FIELDS (sessUserFields).
func sessPartFieldsLua() string {
	q := func(names []string) string {
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = "'" + n + "'"
		}
		return strings.Join(out, ", ")
	}
	var ttl []string
	for _, n := range sessPartFields {
		if !slices.Contains(sessChallengeFields, n) {
			ttl = append(ttl, n)
		}
	}
	return "local SESSION_FIELDS = {" + q(sessPartFields) + "}\nlocal SESSION_TTL_FIELDS = {" + q(ttl) + "}\nlocal LIVE = '" + fieldLive + "'\n" +
		"local SESSION_USER_FIELDS = {" + q(sessUserFields) + "}\n"
}

// splitLive replaces the live marker in m (a session's flat fields) with the absoluteExpiresAtMs
// and verifierMac it holds; a marker without the separator yields no verifierMac, so its
// readers refuse the session as corrupt.
func splitLive(m map[string]string) {
	v, ok := m[fieldLive]
	if !ok {
		return
	}
	delete(m, fieldLive)
	abs, mac, ok := strings.Cut(v, liveSep)
	m[fieldAbsoluteExpires] = abs
	if ok {
		m[fieldVerifierMAC] = mac
	}
}

// liveAbs is the absolute deadline (ms) in the live marker of the session part in user (the
// user's hash's fields); 0 when it is absent or does not parse.
func liveAbs(user map[string]string, part string) int64 {
	abs, _, _ := strings.Cut(user[partField(part, fieldLive)], liveSep)
	return sessAtoi(abs)
}

// partField is the name of a session's field in the user's hash.
func partField(part, name string) string { return part + ":" + name }

// sessionView is the flat field map (the per-session hash's names, what decodeView reads) of
// the session part, from user holding the user's hash's fields (all of them, or the user's
// fields and the session's that were asked for). The defaults of the per-user layout are
// applied: createdAtMs is the hash's when the session holds none, updatedAtMs the session's
// createdAtMs; the live marker becomes absoluteExpiresAtMs and verifierMac. A session without
// its marker yields the user's fields only (the caller decides whether that is missing or
// corrupt).
func sessionView(user map[string]string, part string) map[string]string {
	m := make(map[string]string, len(sessViewFields))
	prefix := part + ":"
	for k, v := range user {
		if name, ok := strings.CutPrefix(k, prefix); ok {
			m[name] = v
		}
	}
	splitLive(m)
	if len(m) == 0 {
		return m
	}
	for _, n := range []string{fieldUserID, fieldTenantID, fieldSchemaVersion} {
		if v, ok := user[n]; ok {
			m[n] = v
		}
	}
	if _, ok := m[fieldCreatedAt]; !ok {
		if v, ok := user[fieldCreatedAt]; ok {
			m[fieldCreatedAt] = v
		}
	}
	if _, ok := m[fieldUpdatedAt]; !ok {
		if v, ok := m[fieldCreatedAt]; ok {
			m[fieldUpdatedAt] = v
		}
	}
	return m
}
