package sessions

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// Input bounds (the contract's, enforced again here for callers that bypass the HTTP layer).
const (
	MaxLabelRunes     = 64
	MaxUserAgentBytes = 512
	MaxIPBytes        = 45
	MaxTenantBytes    = session.MaxTenantBytes
	maxTimeout        = 30 * 24 * time.Hour
)

var userIDPattern = regexp.MustCompile(`^[A-Za-z0-9._@:+-]{1,128}$`)

// fieldErr is a 400 naming one field (JSON Pointer) or one parameter.
func fieldErr(pointer, detail string) error {
	f := apperr.FieldError{Pointer: pointer, Detail: detail}
	name := pointer
	if strings.Contains(pointer, ":") {
		f = apperr.FieldError{Parameter: pointer, Detail: detail}
	}
	return &apperr.Error{Kind: apperr.Validation, Detail: "Invalid: " + name + ".", Fields: []apperr.FieldError{f}}
}

func checkTenant(tenant string) error {
	if tenant == "" || len(tenant) > MaxTenantBytes {
		return apperr.New(apperr.Unauthenticated, "The caller has no usable tenant.")
	}
	return nil
}

func checkUserID(pointer, id string) error {
	if !userIDPattern.MatchString(id) {
		return fieldErr(pointer, "must be 1 to 128 characters of A-Z a-z 0-9 . _ @ : + -")
	}
	return nil
}

// check validates a create request and resolves its timeouts against the defaults.
func (in *CreateInput) check(defIdle, defAbs time.Duration) error {
	if err := checkUserID("/userId", in.UserID); err != nil {
		return err
	}
	if in.AuthLevel != session.LevelBasic && in.AuthLevel != session.LevelMFA {
		return fieldErr("/authLevel", "must be BASIC or MFA")
	}
	if in.MFARequired && in.AuthLevel == session.LevelMFA {
		return apperr.New(apperr.Unprocessable, "A session that already has authLevel MFA cannot start in MFA_REQUIRED.")
	}
	if err := checkLabel(in.DeviceLabel); err != nil {
		return err
	}
	if err := checkGroups("/groups", in.Groups); err != nil {
		return err
	}
	if len(in.UserAgent) > MaxUserAgentBytes || !utf8.ValidString(in.UserAgent) {
		return fieldErr("/device/userAgent", "must be valid UTF-8 of at most 512 bytes")
	}
	if in.IP != "" {
		a, err := netip.ParseAddr(in.IP)
		if len(in.IP) > MaxIPBytes || err != nil || a.Zone() != "" {
			return fieldErr("/device/ip", "must be an IPv4 or IPv6 address")
		}
		in.IP = a.Unmap().String()
	}
	return in.timeouts(defIdle, defAbs)
}

// checkGroups refuses more than session.MaxGroups groups, or one outside the charset and
// length bound, naming the bound; pointer locates the list in the request.
func checkGroups(pointer string, groups []string) error {
	if len(groups) > session.MaxGroups {
		return fieldErr(pointer, fmt.Sprintf("must hold at most %d groups", session.MaxGroups))
	}
	for i, g := range groups {
		if !session.ValidGroup(g) {
			return fieldErr(fmt.Sprintf("%s/%d", pointer, i), fmt.Sprintf("must be 1 to %d characters of A-Z a-z 0-9 . _ : @ / + -", session.MaxGroupBytes))
		}
		if slices.Contains(groups[:i], g) {
			return fieldErr(fmt.Sprintf("%s/%d", pointer, i), "must not repeat a group")
		}
	}
	return nil
}

func checkLabel(label string) error {
	if !utf8.ValidString(label) || utf8.RuneCountInString(label) > MaxLabelRunes || len(label) > session.MaxDeviceLabelBytes {
		return fieldErr("/device/label", "must be valid UTF-8 of at most 64 characters")
	}
	if strings.IndexFunc(label, unicode.IsControl) >= 0 {
		return fieldErr("/device/label", "must not contain control characters")
	}
	return nil
}

// timeouts fills in the defaults: an explicit idle timeout over the absolute one is refused;
// a default idle timeout is shortened to an explicit absolute one.
func (in *CreateInput) timeouts(defIdle, defAbs time.Duration) error {
	idleSet, absSet := in.IdleTimeout != 0, in.AbsoluteTimeout != 0
	if idleSet && (in.IdleTimeout < time.Second || in.IdleTimeout > maxTimeout) {
		return fieldErr("/idleTimeoutSeconds", "out of range")
	}
	if absSet && (in.AbsoluteTimeout < time.Second || in.AbsoluteTimeout > maxTimeout) {
		return fieldErr("/absoluteTimeoutSeconds", "out of range")
	}
	if !idleSet {
		in.IdleTimeout = defIdle
	}
	if !absSet {
		in.AbsoluteTimeout = max(defAbs, in.IdleTimeout)
	}
	if in.IdleTimeout > in.AbsoluteTimeout {
		if idleSet {
			return fieldErr("/idleTimeoutSeconds", "must not exceed absoluteTimeoutSeconds")
		}
		in.IdleTimeout = in.AbsoluteTimeout
	}
	return nil
}

// checkCode accepts exactly six ASCII digits.
func checkCode(code string) error {
	if len(code) != codeDigits {
		return fieldErr("/code", "must be 6 digits")
	}
	for i := 0; i < len(code); i++ {
		if code[i] < '0' || code[i] > '9' {
			return fieldErr("/code", "must be 6 digits")
		}
	}
	return nil
}

func checkChallengeID(id string) error {
	if len(id) != challengeIDLen || !session.B64URL(id) {
		return fieldErr("/challengeId", "must be 22 base64url characters")
	}
	return nil
}
