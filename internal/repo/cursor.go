package repo

import (
	"strings"

	"github.com/hashgate/hashgate/internal/page"
)

// An index list's cursor is internal/page's, naming the last index member a page examined
// (object_index) in scope, which names the index and the query it belongs to (the list
// decides: e.g. "quotes/customer"). A cursor read back with another scope, or whose member is
// not of the query's value tag, is refused with a 400 naming `cursor`.

// maxCursorMember bounds a member a cursor may carry (tag, 13 digits, an id).
const maxCursorMember = 160

// DecodeCursor reads a cursor (page.Encode of scope and a member) whose member belongs to
// value tag tag ("" for an index of all objects): the member, "" for an empty cursor (the
// first page), or a 400 naming `cursor` when it was made for another query or is not one of ours.
func DecodeCursor(cursor, scope, tag string) (string, error) {
	member, err := page.Decode(scope, cursor)
	if err != nil || cursor == "" {
		return member, err
	}
	if !validMember(member, tag) {
		return "", page.BadCursor("names no entry of this query")
	}
	return member, nil
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
