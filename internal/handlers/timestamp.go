// Timestamp: the one way a date-time of the contract is written.

package handlers

import (
	"errors"
	"time"
)

// timestampLayout is RFC 3339 in UTC with exactly three fractional digits
// (2026-11-26T15:04:05.070Z): every answer's timestamps have one shape, whatever the instant's
// precision (a token's whole seconds, a session's milliseconds) and whichever zone it was read in.
const timestampLayout = "2006-01-02T15:04:05.000Z"

// Timestamp is every date-time of the contract (oapi-codegen.yaml maps format date-time to it):
// it answers in timestampLayout and reads any RFC 3339 date-time (a request's dueAt).
type Timestamp struct{ time.Time }

// ts is t as the contract writes it.
func ts(t time.Time) Timestamp { return Timestamp{t} }

// tsOrNil is t as the contract writes it, nil (absent) for the zero time.
func tsOrNil(t time.Time) *Timestamp {
	if t.IsZero() {
		return nil
	}
	return &Timestamp{t}
}

// MarshalJSON writes t in UTC, truncated to the millisecond, with exactly three fractional digits.
func (t Timestamp) MarshalJSON() ([]byte, error) {
	u := t.UTC().Truncate(time.Millisecond)
	if y := u.Year(); y < 0 || y > 9999 {
		return nil, errors.New("handlers: timestamp year outside 0000-9999")
	}
	b := make([]byte, 0, len(timestampLayout)+2)
	b = append(b, '"')
	b = u.AppendFormat(b, timestampLayout)
	return append(b, '"'), nil
}

// UnmarshalJSON reads any RFC 3339 date-time.
func (t *Timestamp) UnmarshalJSON(b []byte) error {
	return t.Time.UnmarshalJSON(b)
}

// Bind reads a date-time query parameter (oapi-codegen's runtime.Binder, which would otherwise
// read this struct as a date): any RFC 3339 date-time (a list's updatedSince).
func (t *Timestamp) Bind(src string) error {
	v, err := time.Parse(time.RFC3339Nano, src)
	if err != nil {
		return err
	}
	t.Time = v
	return nil
}
