package repo

import (
	"context"
	"slices"
	"strings"

	"github.com/redis/rueidis"
)

// The per-user layout (LayoutPerUser; docs/KEYS.md, "Sessions"). A user's sessions live in one
// hash, <prefix>:v1:sess:{<userTag>}:
//
//   - the user's fields, once and without a field TTL: userId, tenantId, schemaVersion,
//     createdAtMs (when the hash was created), updatedAtMs (the last write to any session);
//   - each session's fields as "<idPart>:<name>", every one with the session's idle deadline
//     (never past its absolute deadline) as its field TTL, except the live MFA challenge's
//     (mfaChallengeId, mfaCodeMac: their own, shorter). "<idPart>:absoluteExpiresAtMs" is
//     always present: it marks the session as live, and its field TTL is the end of the idle
//     window (what PTTL of a per-session hash is). The other names are the per-session hash's
//     (sessions_fields.go), written under the same rule (only once they differ from their
//     default), with two more defaults: "<idPart>:createdAtMs" is the hash's createdAtMs when
//     absent, "<idPart>:updatedAtMs" the session's createdAtMs;
//   - the key's own TTL is raised (never shortened) to the latest absolute deadline of any
//     session it received, so it outlives every field.
//
// Every per-user script declares the user's hash alone (verify adds the MFA attempt counter, in
// the same slot): a single-key script is served while the user's slot migrates, rueidis
// following ASK, where one that also declared the per-session layout's device index (which
// never exists once the user is migrated) would be refused with TRYAGAIN for the whole move.
// Sessions a per-session gateway wrote are found instead by a single-key EXISTS of that index
// sent in the same round trip as the script (runUser): when it exists, the user's sessions are
// moved into the hash (session_migrate.lua, which deletes the index) and a script whose answer
// said the hash lacks what it looked for runs again (uMiss, uNone).

// sessPartFields are the names a session's fields take in the user's hash (after "<idPart>:"):
// HDEL of a session and HPEXPIRE of an idle refresh name them all. The scripts that need the
// list hold a copy between "-- BEGIN session_fields" and "-- END session_fields" lines
// (sessPartFieldsLua); TestSessionFieldListsAgree fails on drift.
var sessPartFields = []string{sfAbsoluteExpires, sfCreatedAt, sfUpdatedAt, sfStatus, sfAuthLevel, sfLastSeenAt,
	sfLastRotatedAt, sfMFAVerifiedAt, sfIdleTimeout, sfDeviceLabel, sfIPHash, sfUserAgentHash, sfFailedMFA,
	sfLoginPending, sfChallengeAt, sfChallengeID, sfCodeMAC}

// sessChallengeFields keep their own TTL (the challenge's): an idle refresh does not extend them.
var sessChallengeFields = []string{sfChallengeID, sfCodeMAC}

// sessUserFields are the user's own fields in the user's hash.
var sessUserFields = []string{sfUserID, sfTenantID, sfSchemaVersion, sfCreatedAt, sfUpdatedAt}

// sessPartFieldsLua is the Lua block the scripts embed: SESSION_FIELDS (every name) and
// SESSION_TTL_FIELDS (those an idle refresh extends).
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
	return "local SESSION_FIELDS = {" + q(sessPartFields) + "}\nlocal SESSION_TTL_FIELDS = {" + q(ttl) + "}\n"
}

// partField is the name of a session's field in the user's hash.
func partField(part, name string) string { return part + ":" + name }

// partFields names a session's fields in the user's hash.
func partFields(part string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = partField(part, n)
	}
	return out
}

// sessionView is the flat field map (the per-session hash's names, what decodeView reads) of
// the session part, from user holding the user's hash's fields (all of them, or the user's
// fields and the session's that were asked for). The defaults of the per-user layout are
// applied: createdAtMs is the hash's when the session holds none, updatedAtMs the session's
// createdAtMs. A session without its absoluteExpiresAtMs yields the user's fields only (the
// caller decides whether that is missing or corrupt).
func sessionView(user map[string]string, part string) map[string]string {
	m := make(map[string]string, len(sessViewFields))
	prefix := part + ":"
	for k, v := range user {
		if name, ok := strings.CutPrefix(k, prefix); ok {
			m[name] = v
		}
	}
	if len(m) == 0 {
		return m
	}
	for _, n := range []string{sfUserID, sfTenantID, sfSchemaVersion} {
		if v, ok := user[n]; ok {
			m[n] = v
		}
	}
	if _, ok := m[sfCreatedAt]; !ok {
		if v, ok := user[sfCreatedAt]; ok {
			m[sfCreatedAt] = v
		}
	}
	if _, ok := m[sfUpdatedAt]; !ok {
		if v, ok := m[sfCreatedAt]; ok {
			m[sfUpdatedAt] = v
		}
	}
	return m
}

// sessUserAttempts bounds runUser's migrate-and-retry loop.
const sessUserAttempts = 3

// runUser runs a per-user script on c, with a single-key EXISTS of the user's device index of
// the per-session layout in the same round trip (scriptWith). When the index exists the user's
// sessions are moved into the hash (the answer then stood on the hash alone: the user had no
// hash, or a misconfigured per-session gateway still writes) and, when miss says the answer is
// one the script gives for a session or user its hash does not hold, the script runs again:
// the answers miss accepts are the ones a script gives without writing, or whose write a
// second run completes (a revoke-all of what the hash held). A create (miss never true) that
// made the user's hash keeps its session and the moved ones join it.
func (r *Sessions) runUser(ctx context.Context, c rueidis.Client, name string, l *rueidis.Lua, tag string, keys, args []string, miss func(Reply) bool) (Reply, error) {
	for range sessUserAttempts {
		rep, idx, err := r.scriptWith(ctx, c, name, l, keys, args, c.B().Exists().Key(r.devicesKey(tag)).Build())
		if err != nil {
			return rep, err
		}
		n, err := idx.AsInt64()
		switch {
		case err != nil && miss(rep):
			// Not known whether the user has sessions to move (an ASK on a pinned connection
			// among them): the answer cannot stand, and the script wrote nothing.
			return Reply{}, redisErr(name, err)
		case err != nil || n == 0:
			// A hash that holds the session means the user has no index (they never coexist).
			return rep, nil
		}
		if err := r.migrate(ctx, c, tag); err != nil {
			return Reply{}, err
		}
		if !miss(rep) {
			return rep, nil
		}
	}
	return Reply{}, redisErr(name, errRetry)
}

// scriptWith runs script l by EVALSHA with cmd after it in one round trip on c, and answers the
// script's decoded reply (as runOn) and cmd's result. After NOSCRIPT (a server that lost its
// scripts) the script is run alone (EVAL), cmd's result kept.
func (r *Sessions) scriptWith(ctx context.Context, c rueidis.Client, name string, l *rueidis.Lua, keys, args []string, cmd rueidis.Completed) (Reply, rueidis.RedisResult, error) {
	res := c.DoMulti(ctx, c.B().Evalsha().Sha1(luaSHA[l]).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build(), cmd)
	if re, ok := rueidis.IsRedisErr(res[0].Error()); ok && re.IsNoScript() {
		rep, err := r.runOn(ctx, c, name, l, keys, args)
		return rep, res[1], err
	}
	rep, err := decodeScript(name, res[0])
	if err != nil {
		return Reply{}, res[1], r.scriptErr(ctx, name, err)
	}
	if err := rep.bare(CodeNotFound, CodeExists); err != nil {
		return Reply{}, res[1], r.badReply(ctx, name, err)
	}
	return rep, res[1], nil
}

// uMiss is the miss test of the scripts that answer NOT_FOUND for a session the hash does not
// hold (challenge, rotate, verify).
func uMiss(rep Reply) bool { return rep.Code() == CodeNotFound }

// uNone is the miss test of the scripts that answer {'OK', 0} when nothing was there to end
// (revoke, revoke-all).
func uNone(rep Reply) bool {
	n, err := rep.Int(0)
	return rep.Code() == CodeOK && err == nil && n == 0
}
