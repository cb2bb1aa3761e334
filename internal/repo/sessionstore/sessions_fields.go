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
	fieldUserID          = "userId"
	fieldTenantID        = "tenantId"
	fieldStatus          = "status"
	fieldAuthLevel       = "authLevel"
	fieldCreatedAt       = "createdAtMs"
	fieldUpdatedAt       = "updatedAtMs"
	fieldLastSeenAt      = "lastSeenAtMs"
	fieldLastRotatedAt   = "lastRotatedAtMs"
	fieldMFAVerifiedAt   = "mfaVerifiedAtMs"
	fieldAbsoluteExpires = "absoluteExpiresAtMs"
	fieldIdleTimeout     = "idleTimeoutMs"
	fieldDeviceLabel     = "deviceLabel"
	fieldIPHash          = "ipHash"
	fieldUserAgentHash   = "userAgentHash"
	fieldFailedMFA       = "failedMfaAttempts"
	fieldSchemaVersion   = "schemaVersion"
	fieldChallengeID     = "mfaChallengeId"
	fieldChallengeAt     = "mfaChallengeCreatedAtMs"
	fieldCodeMAC         = "mfaCodeMac"
	// fieldLoginPending ("1") marks a session created with mfaRequired: its login is not complete
	// until the MFA verify, which deletes the field. Written only then (a plain session never
	// holds it); a challenge on a logged-in session (step-up) does not write it.
	fieldLoginPending = "loginPending"
	// fieldGroups holds the session's groups joined by session.GroupsSep; written only when the
	// session has any (a create with groups, a replacement of its groups).
	fieldGroups = "groups"
	// fieldVerifierMAC is the token's verifier as a keyed MAC (session.Record.VerifierMAC):
	// the hot path accepts a token only when its verifier's MAC is this one. Written by the
	// create, replaced by rotation and step-up; never in a view.
	fieldVerifierMAC = "verifierMac"
	// fieldLive is the per-user layout's live marker, "<idPart>:live" (per_user.go): the
	// session's absoluteExpiresAtMs and verifierMac joined by liveSep, in one field.
	fieldLive = "live"
	liveSep   = "."
)

// maxMACBytes bounds a verifier MAC (22 base64url characters as the service makes them).
const maxMACBytes = 64

// validMAC reports whether mac can be a stored verifier MAC.
func validMAC(mac string) bool { return len(mac) <= maxMACBytes && session.B64URL(mac) }

// sessViewFields are what the full view and the device list read: never the code MAC or the
// device hashes. The verifier MAC is read with them (the hot path's view read compares it) but
// never decoded into a view.
var sessViewFields = []string{fieldUserID, fieldTenantID, fieldStatus, fieldAuthLevel, fieldCreatedAt, fieldUpdatedAt, fieldLastSeenAt,
	fieldLastRotatedAt, fieldMFAVerifiedAt, fieldAbsoluteExpires, fieldIdleTimeout, fieldDeviceLabel, fieldFailedMFA, fieldSchemaVersion,
	fieldChallengeID, fieldChallengeAt, fieldLoginPending, fieldGroups, fieldVerifierMAC}

// decodeView maps the view fields in f to a Session and returns the session's idle timeout in
// ms, recording missing and malformed fields in f; the caller classifies with f.schema() and
// f.err(). Every reader (the hot path, the full view, the device list) decodes here, so a
// field is corrupt for all of them or for none.
func decodeView(f *repo.Fields, ref session.Ref) (session.Session, int64) {
	s := session.Session{Ref: ref, UserID: f.Str(fieldUserID), TenantID: f.Str(fieldTenantID), Status: sessEnum(f, fieldStatus, session.Active),
		AuthLevel: sessEnum(f, fieldAuthLevel, session.LevelBasic), CreatedAt: sessTime(f.Int64(fieldCreatedAt)), LastSeenAt: sessTime(f.OptInt64(fieldLastSeenAt)),
		AbsoluteExpiresAt: sessTime(f.Int64(fieldAbsoluteExpires)), UpdatedAt: sessTime(f.OptInt64(fieldUpdatedAt)),
		LastRotatedAt: sessTime(f.OptInt64(fieldLastRotatedAt)), MFAVerifiedAt: sessTime(f.OptInt64(fieldMFAVerifiedAt)),
		DeviceLabel: f.Opt(fieldDeviceLabel), FailedMFAAttempts: f.OptInt64(fieldFailedMFA), ChallengeLive: f.Opt(fieldChallengeID) != "",
		LoginPending: sessFlag(f, fieldLoginPending), Groups: sessGroups(f)}
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
	v, ok := f.Lookup(fieldIdleTimeout)
	if !ok {
		return ImplicitIdle.Milliseconds()
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		f.Bad(fieldIdleTimeout)
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
	v, ok := f.Lookup(fieldGroups)
	if !ok {
		return nil
	}
	g := session.SplitGroups(v)
	if len(g) == 0 || len(g) > session.MaxGroups {
		f.Bad(fieldGroups)
		return nil
	}
	for _, x := range g {
		if !session.ValidGroup(x) {
			f.Bad(fieldGroups)
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
	return sessGroups(repo.NewFields(map[string]string{fieldGroups: v}))
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
		f.Bad(fieldStatus)
	}
	switch level {
	case session.LevelBasic, session.LevelMFA:
	default:
		f.Bad(fieldAuthLevel)
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
