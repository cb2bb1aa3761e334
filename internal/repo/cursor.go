package repo

import (
	"encoding/base64"
	"strings"

	"github.com/hashgate/hashgate/internal/apperr"
)

// A list cursor is opaque to callers: base64url of `<scope> <member>`, where member is the last
// index member a page examined (object_index) and scope names the index and the query it
// belongs to (the list decides: e.g. "quotes/customer"). A cursor read back with another scope,
// or whose member is not of the query's value tag, is refused with a 400 naming `cursor`.

// maxCursorMember bounds a member a cursor may carry (tag, 13 digits, an id).
const maxCursorMember = 160

// EncodeCursor is the cursor of the page after member, in scope; "" when member is "" (the last
// page has no next cursor).
func EncodeCursor(scope, member string) string {
	if member == "" {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(scope + " " + member))
}

// DecodeCursor reads a cursor made by EncodeCursor for scope whose member belongs to value tag
// tag ("" for an index of all objects): the member, "" for an empty cursor (the first page),
// or a 400 naming `cursor` when it was made for another query or is not one of ours.
func DecodeCursor(cursor, scope, tag string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	s, member, ok := strings.Cut(string(raw), " ")
	if err != nil || !ok || s != scope || !validMember(member, tag) {
		return "", CursorError()
	}
	return member, nil
}

// CursorError is the refusal of a cursor that does not fit the query.
func CursorError() error {
	return &apperr.Error{Kind: apperr.Validation, Detail: "The cursor does not belong to this query: send the nextCursor of the previous page with the same filters, or none for the first page.",
		Fields: []apperr.FieldError{{Parameter: "query:cursor", Detail: "was not issued for this query"}}}
}

// validMember reports whether m is `<tag>|<13 digits>|<id>` with an id of no '|' or space.
func validMember(m, tag string) bool {
	if len(m) > maxCursorMember || !strings.HasPrefix(m, tag+"|") {
		return false
	}
	rest := m[len(tag)+1:]
	if len(rest) < 15 || rest[13] != '|' {
		return false
	}
	for _, c := range rest[:13] {
		if c < '0' || c > '9' {
			return false
		}
	}
	id := rest[14:]
	return id != "" && !strings.ContainsAny(id, "| \t\r\n")
}
