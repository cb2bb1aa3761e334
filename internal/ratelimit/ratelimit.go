// Package ratelimit holds the gateway's rate-limit vocabulary, with no Redis code: policies,
// decisions, their metric, key names and the IETF RateLimit-Policy and RateLimit response
// headers. The counters themselves live in Redis, one small hash per identifier and purpose,
// co-located with the identifier's hash tag, whose window comes from the server's clock
// (redis.call('TIME')) so replicas agree; identifiers reach Redis only as keyed hashes. The
// request-rate limiter that keeps them is the sub-package ratesync.
//
// The counter of one attempt is the Lua function fixed_window, a snippet of the store kit
// (internal/repo/lua/fixed_window.lua) that scripts counting an attempt atomically with other
// work (MFA verification) include; scripts/fixed_window_attempt.lua runs it alone for tests.
package ratelimit

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
)

// Policy is a quota: Limit attempts per Window, named for the headers (e.g. "mfa").
type Policy struct {
	Name   string
	Limit  int
	Window time.Duration
}

// ErrBadPolicy reports an unusable policy.
var ErrBadPolicy = errors.New("ratelimit: bad policy")

var namePattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// Validate checks the policy: a short lowercase name (it appears in key names and headers),
// a positive limit and a window of at least one second.
func (p Policy) Validate() error {
	switch {
	case !namePattern.MatchString(p.Name):
		return fmt.Errorf("%w: name must match %s", ErrBadPolicy, namePattern)
	case p.Limit < 1:
		return fmt.Errorf("%w: limit must be at least 1", ErrBadPolicy)
	case p.Window < time.Second:
		return fmt.Errorf("%w: window must be at least 1s", ErrBadPolicy)
	}
	return nil
}

// Buffer is how long a counter outlives its window: a tenth of the window, within 1s..60s.
func (p Policy) Buffer() time.Duration {
	return min(max(p.Window/10, time.Second), time.Minute)
}

// PolicyHeader formats the IETF RateLimit-Policy field: "mfa";q=5;w=600.
func (p Policy) PolicyHeader() string {
	return sfString(p.Name) + ";q=" + strconv.Itoa(p.Limit) + ";w=" + strconv.FormatInt(ceilSeconds(p.Window), 10)
}

// Key is the counter's key: <prefix>:v1:rl:{<tag>}:<purpose>. tag must already be a keyed
// hash (a user tag, or keyhash.Tag of the identifier); it makes the counter share a slot with
// the identifier's other keys.
func Key(prefix, tag, purpose string) string {
	return prefix + ":v1:rl:{" + tag + "}:" + purpose
}

// Request names one counter a request counts against: its policy and the identifier (a token
// id, a tenant, a session id), which reaches Redis only as a keyed hash.
type Request struct {
	Policy *Policy
	ID     string
}

// Decision is the outcome of one counted attempt.
type Decision struct {
	Policy  Policy
	Allowed bool
	// Count is the number of attempts counted in the current window (refused ones excluded).
	Count int
	// Reset is the time until the current window ends.
	Reset time.Duration
}

// Remaining is how many attempts are left in the window.
func (d Decision) Remaining() int { return max(d.Policy.Limit-d.Count, 0) }

// Header formats the IETF RateLimit field: "mfa";r=0;t=42.
func (d Decision) Header() string {
	return sfString(d.Policy.Name) + ";r=" + strconv.Itoa(d.Remaining()) + ";t=" + strconv.FormatInt(ceilSeconds(d.Reset), 10)
}

// Headers are the RateLimit-Policy and RateLimit fields for a response.
func (d Decision) Headers() map[string]string {
	return map[string]string{"RateLimit-Policy": d.Policy.PolicyHeader(), "RateLimit": d.Header()}
}

// Err is nil when the attempt is allowed, else a 429 refusal carrying Retry-After, the
// RateLimit headers and attemptsLeft (0).
func (d Decision) Err() error {
	if d.Allowed {
		return nil
	}
	e := &apperr.Error{
		Kind:       apperr.RateLimited,
		Detail:     fmt.Sprintf("Too many %s attempts; retry after %d seconds.", d.Policy.Name, ceilSeconds(d.Reset)),
		RetryAfter: max(d.Reset, time.Second),
	}
	for k, v := range d.Headers() {
		e.WithHeader(k, v)
	}
	return e.With("attemptsLeft", 0)
}

// sfString is an RFC 8941 structured-field string.
func sfString(s string) string {
	if !strings.ContainsAny(s, `\"`) {
		return `"` + s + `"`
	}
	return `"` + sfEscaper.Replace(s) + `"`
}

// appendSFString appends s to b as an RFC 8941 structured-field string.
func appendSFString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' || s[i] == '"' {
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}

// sfEscaper is built once: a strings.Replacer costs kilobytes to build.
var sfEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`)

func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// HeaderValues formats the RateLimit-Policy and RateLimit fields for several policies that
// applied to one request, as the draft's lists: `"token";q=6000;w=60, "tenant";q=30000;w=60`.
func HeaderValues(ds []Decision) (policy, limit string) {
	var pb, lb [160]byte
	p, l := pb[:0], lb[:0]
	for i, d := range ds {
		if i > 0 {
			p, l = append(p, ", "...), append(l, ", "...)
		}
		p = append(appendSFString(p, d.Policy.Name), ";q="...)
		p = append(strconv.AppendInt(p, int64(d.Policy.Limit), 10), ";w="...)
		p = strconv.AppendInt(p, ceilSeconds(d.Policy.Window), 10)
		l = append(appendSFString(l, d.Policy.Name), ";r="...)
		l = append(strconv.AppendInt(l, int64(d.Remaining()), 10), ";t="...)
		l = strconv.AppendInt(l, ceilSeconds(d.Reset), 10)
	}
	return string(p), string(l)
}

// Refusal is the 429 for a request some of whose policies refused it: Retry-After is when the
// latest of those windows ends, the detail names them, and the RateLimit fields list every
// policy that applied.
func Refusal(ds []Decision) error {
	var names []string
	var wait time.Duration
	for _, d := range ds {
		if !d.Allowed {
			names = append(names, d.Policy.Name)
			wait = max(wait, d.Reset)
		}
	}
	e := &apperr.Error{
		Kind: apperr.RateLimited,
		Detail: fmt.Sprintf("Too many requests under the %s rate limit; retry after %d seconds.",
			strings.Join(names, " and "), ceilSeconds(wait)),
		RetryAfter: max(wait, time.Second),
	}
	p, l := HeaderValues(ds)
	return e.WithHeader("RateLimit-Policy", p).WithHeader("RateLimit", l)
}
