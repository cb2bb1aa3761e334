package sessionstore

import (
	"strconv"
	"time"

	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// The session hash's fields and their decoding: every reader (the hot path, the full view,
// the device list) decodes through decodeView.

// Session hash field names. A plain session (ACTIVE, BASIC, no device information, no MFA
// challenge, the default idle timeout, never rotated or refreshed) stores only userId,
// tenantId, schemaVersion and the createdAtMs, updatedAtMs and absoluteExpiresAtMs
// timestamps; the other fields are written when they first differ from their default:
// status (ACTIVE) by a create that requires MFA or by an MFA challenge, authLevel (BASIC) by
// a create at level MFA or by step-up, failedMfaAttempts (0) by the first wrong code,
// lastSeenAtMs (createdAtMs) by the first idle refresh, lastRotatedAtMs (createdAtMs) by
// rotation or step-up, idleTimeoutMs (ImplicitIdle) when the session's idle timeout is any
// other, the device fields when given. No transition moves a session back to ACTIVE or
// BASIC, so nothing writes a default back; a hash holding a default explicitly reads the same.
// userId and tenantId are always written: a read that finds neither takes the session for
// missing.
const (
	sfUserID          = "userId"
	sfTenantID        = "tenantId"
	sfStatus          = "status"
	sfAuthLevel       = "authLevel"
	sfCreatedAt       = "createdAtMs"
	sfUpdatedAt       = "updatedAtMs"
	sfLastSeenAt      = "lastSeenAtMs"
	sfLastRotatedAt   = "lastRotatedAtMs"
	sfMFAVerifiedAt   = "mfaVerifiedAtMs"
	sfAbsoluteExpires = "absoluteExpiresAtMs"
	sfIdleTimeout     = "idleTimeoutMs"
	sfDeviceLabel     = "deviceLabel"
	sfIPHash          = "ipHash"
	sfUserAgentHash   = "userAgentHash"
	sfFailedMFA       = "failedMfaAttempts"
	sfSchemaVersion   = "schemaVersion"
	sfChallengeID     = "mfaChallengeId"
	sfChallengeAt     = "mfaChallengeCreatedAtMs"
	sfCodeMAC         = "mfaCodeMac"
	// sfLoginPending ("1") marks a session created with mfaRequired: its login is not complete
	// until the MFA verify, which deletes the field. Written only then (a plain session never
	// holds it); a challenge on a logged-in session (step-up) does not write it.
	sfLoginPending = "loginPending"
	// sfGroups holds the session's groups joined by session.GroupsSep; written only when the
	// session has any (a create with groups, a replacement of its groups).
	sfGroups = "groups"
)

// sessViewFields are what the full view and the device list read: never the code MAC or the
// device hashes.
var sessViewFields = []string{sfUserID, sfTenantID, sfStatus, sfAuthLevel, sfCreatedAt, sfUpdatedAt, sfLastSeenAt,
	sfLastRotatedAt, sfMFAVerifiedAt, sfAbsoluteExpires, sfIdleTimeout, sfDeviceLabel, sfFailedMFA, sfSchemaVersion,
	sfChallengeID, sfChallengeAt, sfLoginPending, sfGroups}

// decodeView maps the view fields in f to a Session and returns the session's idle timeout in
// ms, recording missing and malformed fields in f; the caller classifies with f.schema() and
// f.err(). Every reader (the hot path, the full view, the device list) decodes here, so a
// field is corrupt for all of them or for none.
func decodeView(f *repo.Fields, ref session.Ref) (session.Session, int64) {
	s := session.Session{Ref: ref, UserID: f.Str(sfUserID), TenantID: f.Str(sfTenantID), Status: sessEnum(f, sfStatus, session.Active),
		AuthLevel: sessEnum(f, sfAuthLevel, session.LevelBasic), CreatedAt: sessTime(f.Int64(sfCreatedAt)), LastSeenAt: sessTime(f.OptInt64(sfLastSeenAt)),
		AbsoluteExpiresAt: sessTime(f.Int64(sfAbsoluteExpires)), UpdatedAt: sessTime(f.OptInt64(sfUpdatedAt)),
		LastRotatedAt: sessTime(f.OptInt64(sfLastRotatedAt)), MFAVerifiedAt: sessTime(f.OptInt64(sfMFAVerifiedAt)),
		DeviceLabel: f.Opt(sfDeviceLabel), FailedMFAAttempts: f.OptInt64(sfFailedMFA), ChallengeLive: f.Opt(sfChallengeID) != "",
		LoginPending: sessFlag(f, sfLoginPending), Groups: sessGroups(f)}
	// Written only once they differ from createdAtMs: by the first idle refresh, by rotation
	// and step-up.
	if s.LastSeenAt.IsZero() {
		s.LastSeenAt = s.CreatedAt
	}
	if s.LastRotatedAt.IsZero() {
		s.LastRotatedAt = s.CreatedAt
	}
	sessCheckEnums(f, s.Status, s.AuthLevel)
	return s, sessIdleMs(f)
}

// sessIdleMs is the session's idle timeout in ms. idleTimeoutMs is written only when the
// session's timeout is not ImplicitIdle (and never by schema 1): without it ImplicitIdle
// applies, never the configuration of the moment. A present value must be a positive integer;
// anything else is recorded as bad in f (corrupt: never served with a default).
func sessIdleMs(f *repo.Fields) int64 {
	v, ok := f.Lookup(sfIdleTimeout)
	if !ok {
		return ImplicitIdle.Milliseconds()
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		f.Bad(sfIdleTimeout)
		return 0
	}
	return n
}

// sessFlag reads a flag field: absent is false, "1" true, anything else is recorded as bad.
func sessFlag(f *repo.Fields, name string) bool {
	v, ok := f.Lookup(name)
	if ok && v != "1" {
		f.Bad(name)
	}
	return ok
}

// sessGroups reads the groups field: absent is none; a value that is not groups joined by
// session.GroupsSep within their bounds is recorded as bad.
func sessGroups(f *repo.Fields) []string {
	v, ok := f.Lookup(sfGroups)
	if !ok {
		return nil
	}
	g := session.SplitGroups(v)
	if len(g) == 0 || len(g) > session.MaxGroups {
		f.Bad(sfGroups)
		return nil
	}
	for _, x := range g {
		if !session.ValidGroup(x) {
			f.Bad(sfGroups)
			return nil
		}
	}
	return g
}

// replyGroups is the groups field a script's reply carries (ok false: the session has none),
// read as sessGroups reads the hash: a corrupt value is left out.
func replyGroups(v string, ok bool) []string {
	if !ok {
		return nil
	}
	return sessGroups(repo.NewFields(map[string]string{sfGroups: v}))
}

// sessEnum is the value of the enum field name, def when the hash does not hold it (written
// only once it differs from def). A present value, even empty, is checked by sessCheckEnums.
func sessEnum(f *repo.Fields, name, def string) string {
	if v, ok := f.Lookup(name); ok {
		return v
	}
	return def
}

// sessSchema is the schema version a read classified as outcome carries.
func sessSchema(o repo.Outcome) int {
	if o == repo.OldSchema {
		return repo.SchemaVersion - 1
	}
	return repo.SchemaVersion
}

// sessCheckEnums marks status and authLevel bad when they hold an unknown value (an empty
// one included: absent fields were given their default by sessEnum).
func sessCheckEnums(f *repo.Fields, status, level string) {
	switch status {
	case session.Active, session.MFARequired, session.MFAVerified:
	default:
		f.Bad(sfStatus)
	}
	switch level {
	case session.LevelBasic, session.LevelMFA:
	default:
		f.Bad(sfAuthLevel)
	}
}

func sessAtoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// sessIdleEnd is when the key expires, never reported past the absolute deadline (the
// server's TIME and PTTL may differ by a millisecond of rounding).
func sessIdleEnd(now, pttl int64, abs time.Time) time.Time {
	end := sessTime(now + pttl)
	if !abs.IsZero() && end.After(abs) {
		return abs
	}
	return end
}

func sessTime(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
