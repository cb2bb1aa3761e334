// Package page is the cursor of a list whose entries each have an exact position: a string
// that orders the list (ascending or descending) and names one entry. A page holds the entries
// strictly after the cursor's position, so a walk lists no entry twice and skips none of those
// that stay unchanged while it runs, whatever is added or removed meanwhile.
//
// A cursor is opaque to callers: base64url of a 6-byte tag of the list's scope (which object's
// list, e.g. one user's sessions) and the position. A cursor made for another scope, or not
// made here, is refused with a 400 naming `cursor`; a forged one that decodes only names a
// position, which is checked like any other.
package page

import (
	"crypto/sha256"
	"encoding/base64"
	"sort"
	"strings"

	"github.com/hashgate/hashgate/internal/apperr"
)

const tagLen = 6

// Page is one page of a list: its entries, and the cursor of the next page ("" on the last).
type Page[T any] struct {
	Items      []T
	NextCursor string
}

// Encode is the cursor naming pos in the list of scope; "" for pos "" (the last page has no
// next cursor).
func Encode(scope, pos string) string {
	if pos == "" {
		return ""
	}
	tag := scopeTag(scope)
	return base64.RawURLEncoding.EncodeToString(append(tag[:], pos...))
}

// Decode is the position cursor names in the list of scope: "" for "" (the first page), a 400
// naming `cursor` when cursor was not made for this scope.
func Decode(scope, cursor string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	tag := scopeTag(scope)
	if err != nil || len(raw) <= tagLen || string(raw[:tagLen]) != string(tag[:]) {
		return "", BadCursor("is not a cursor of this list")
	}
	return string(raw[tagLen:]), nil
}

// BadCursor is the refusal of a cursor that does not fit the request: a 400 naming `cursor`,
// with why as the field's detail.
func BadCursor(why string) error {
	return &apperr.Error{Kind: apperr.Validation,
		Detail: "The cursor does not fit this request: send the nextCursor of the previous page with the same other parameters, or none for the first page.",
		Fields: []apperr.FieldError{{Parameter: "query:cursor", Detail: why}}}
}

// CheckLimit refuses a page size below 1 (the handlers refuse one outside the spec's 1..100
// first): a 400 naming `limit`.
func CheckLimit(limit int) error {
	if limit < 1 {
		return &apperr.Error{Kind: apperr.Validation, Detail: "The limit must be at least 1.",
			Fields: []apperr.FieldError{{Parameter: "query:limit", Detail: "must be at least 1"}}}
	}
	return nil
}

// Of cuts one page out of items, a whole list already in its order: positions (pos) strictly
// ascending, or strictly descending with desc. The page is the at most limit entries after
// the position cursor names (Decode, in the list of scope), and next the cursor of the page
// after it ("" on the last page). valid, when set, checks a decoded position's shape.
func Of[T any](items []T, pos func(T) string, scope, cursor string, limit int, desc bool, valid func(string) bool) (Page[T], error) {
	after, err := Decode(scope, cursor)
	if err == nil {
		err = CheckLimit(limit)
	}
	if err != nil {
		return Page[T]{}, err
	}
	start := 0
	if cursor != "" {
		if valid != nil && !valid(after) {
			return Page[T]{}, BadCursor("names no position of this list")
		}
		start = sort.Search(len(items), func(i int) bool {
			c := strings.Compare(pos(items[i]), after)
			return desc && c < 0 || !desc && c > 0
		})
	}
	end := min(start+limit, len(items))
	next := ""
	if end < len(items) {
		next = Encode(scope, pos(items[end-1]))
	}
	return Page[T]{Items: items[start:end], NextCursor: next}, nil
}

func scopeTag(scope string) [tagLen]byte {
	sum := sha256.Sum256([]byte("hashgate page scope\x00" + scope))
	return [tagLen]byte(sum[:tagLen])
}
