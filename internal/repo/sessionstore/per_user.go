package sessionstore

import (
	"slices"
	"strconv"
	"strings"
	"time"
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
//     per-session hash is), and its value is "<createdAtMs>.<verifierMac>", followed by
//     ".<absoluteExpiresAtMs>" when the deadline is not createdAtMs + ImplicitAbsolute (three
//     values in one field: each in a field of its own costs a session about 25-64 B of Redis). The other names are the
//     per-session hash's (sessions_fields.go), written under the same rule (only once they
//     differ from their default), "<idPart>:updatedAtMs" defaulting to the session's createdAtMs;
//   - with session events on, the user's pending events: evSeq (the last number, kept), ev.<n>
//     (the kit's snippet event_outbox; no ':' in their names, so never a session's field), each
//     event with the events' max age as its field TTL, until the relay copies and deletes them
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
var sessPartFields = []string{fieldLive, fieldUpdatedAt, fieldStatus, fieldAuthLevel, fieldLastSeenAt,
	fieldLastRotatedAt, fieldMFAVerifiedAt, fieldIdleTimeout, fieldDeviceLabel, fieldIPHash, fieldUserAgentHash, fieldFailedMFA,
	fieldLoginPending, fieldGroups, fieldChallengeAt, fieldChallengeID, fieldCodeMAC}

// sessChallengeFields keep their own TTL (the challenge's): an idle refresh does not extend them.
var sessChallengeFields = []string{fieldChallengeID, fieldCodeMAC}

// sessUserFields are the user's own fields in the user's hash.
var sessUserFields = []string{fieldUserID, fieldTenantID, fieldSchemaVersion, fieldCreatedAt, fieldUpdatedAt}

// ImplicitAbsolute is the absolute timeout of a per-user session whose live marker holds no
// deadline: its deadline is its createdAtMs + ImplicitAbsolute. A constant (the default of
// GATEWAY_SESSION_ABSOLUTE_TIMEOUT), as ImplicitIdle: a changed setting stores the deadline of
// the sessions it makes, and never moves those already issued.
const ImplicitAbsolute = 24 * time.Hour

// sessPartFieldsLua is the snippet session_fields: SESSION_FIELDS (every name),
// SESSION_TTL_FIELDS (those an idle refresh extends), LIVE (the live marker's name),
// SESSION_USER_FIELDS (sessUserFields) and IMPLICIT_ABSOLUTE (ImplicitAbsolute in ms).
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
		"local SESSION_USER_FIELDS = {" + q(sessUserFields) + "}\n" +
		"local IMPLICIT_ABSOLUTE = " + strconv.FormatInt(ImplicitAbsolute.Milliseconds(), 10) + "\n"
}

// liveParts cuts a live marker's value into the session's createdAtMs, verifierMac and
// absoluteExpiresAtMs (createdAtMs + ImplicitAbsolute when the marker holds none). A part that
// is absent or does not parse comes back as stored ("" when absent), so that the readers refuse
// the session as corrupt (the scripts' live_split takes such a marker for missing).
func liveParts(v string) (created, mac, abs string) {
	created, rest, _ := strings.Cut(v, liveSep)
	mac, abs, explicit := strings.Cut(rest, liveSep)
	if !explicit {
		abs = created
		if n, err := strconv.ParseInt(created, 10, 64); err == nil {
			abs = strconv.FormatInt(n+ImplicitAbsolute.Milliseconds(), 10)
		}
	}
	return created, mac, abs
}

// splitLive replaces the live marker in m (a session's flat fields) with the createdAtMs,
// verifierMac and absoluteExpiresAtMs it holds (liveParts); a marker without a MAC yields no
// verifierMac, so its readers refuse the session as corrupt.
func splitLive(m map[string]string) {
	v, ok := m[fieldLive]
	if !ok {
		return
	}
	delete(m, fieldLive)
	created, mac, abs := liveParts(v)
	m[fieldCreatedAt], m[fieldAbsoluteExpires] = created, abs
	if mac != "" {
		m[fieldVerifierMAC] = mac
	}
}

// liveAbs is the absolute deadline (ms) in the live marker of the session part in user (the
// user's hash's fields); 0 when it is absent or does not parse.
func liveAbs(user map[string]string, part string) int64 {
	_, _, abs := liveParts(user[partField(part, fieldLive)])
	return sessAtoi(abs)
}

// partField is the name of a session's field in the user's hash.
func partField(part, name string) string { return part + ":" + name }

// sessionView is the flat field map (the per-session hash's names, what decodeView reads) of
// the session part, from user holding the user's hash's fields (all of them, or the user's
// fields and the session's that were asked for). The defaults of the per-user layout are
// applied: updatedAtMs is the session's createdAtMs when it holds none; the live marker becomes createdAtMs, verifierMac and absoluteExpiresAtMs. A
// session without its marker yields the user's fields only (the caller decides whether that
// is missing or corrupt).
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
	if _, ok := m[fieldUpdatedAt]; !ok {
		if v, ok := m[fieldCreatedAt]; ok {
			m[fieldUpdatedAt] = v
		}
	}
	return m
}
