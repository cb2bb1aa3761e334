package page

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hashgate/hashgate/internal/apperr"
)

func ident(s string) string { return s }

// walk pages through list (re-read before each page by read) and returns what it listed.
func walk(t *testing.T, read func(page int) []string, limit int, desc bool) []string {
	t.Helper()
	var out []string
	cursor := ""
	for n := 0; ; n++ {
		pg, err := Of(read(n), ident, "scope", cursor, limit, desc, nil)
		if err != nil || n > 100 || len(pg.Items) > limit {
			t.Fatalf("page %d: %+v %v", n, pg, err)
		}
		out = append(out, pg.Items...)
		if pg.NextCursor == "" {
			return out
		}
		cursor = pg.NextCursor
	}
}

// A page starts strictly after the last position listed, whatever was added or removed
// before or after it meanwhile: nothing twice, no unchanged entry skipped.
func TestOfWalkIsConsistentUnderChange(t *testing.T) {
	base := []string{"b", "d", "f", "h", "j", "l"}
	for _, desc := range []bool{false, true} {
		read := func(n int) []string {
			// Each page sees other entries: some gone (d, then the page's last, j), some new.
			list := slices.Clone(base)
			switch n {
			case 1:
				list = append(list, "a", "e", "k", "m")
				list = slices.DeleteFunc(list, func(s string) bool { return s == "d" })
			case 2:
				list = append(list, "c", "i", "z")
				list = slices.DeleteFunc(list, func(s string) bool { return s == "d" || s == "j" })
			}
			slices.Sort(list)
			if desc {
				slices.Reverse(list)
			}
			return list
		}
		got := walk(t, read, 2, desc)
		seen := map[string]int{}
		for _, s := range got {
			seen[s]++
		}
		for _, s := range []string{"b", "f", "h", "l"} { // never changed
			if seen[s] != 1 {
				t.Errorf("desc=%v: %s listed %d times in %v", desc, s, seen[s], got)
			}
		}
		for s, n := range seen {
			if n > 1 {
				t.Errorf("desc=%v: %s listed %d times in %v", desc, s, n, got)
			}
		}
	}
}

func TestOfPagesAndLastPage(t *testing.T) {
	list := []string{"a", "b", "c", "d", "e"}
	got := walk(t, func(int) []string { return list }, 2, false)
	if strings.Join(got, "") != "abcde" {
		t.Fatalf("walked %v", got)
	}
	if pg, err := Of(list, ident, "s", "", 5, false, nil); err != nil || pg.NextCursor != "" || len(pg.Items) != 5 {
		t.Fatalf("exact fit: %+v %v", pg, err)
	}
	if pg, err := Of([]string{}, ident, "s", "", 5, false, nil); err != nil || pg.NextCursor != "" || len(pg.Items) != 0 {
		t.Fatalf("empty: %+v %v", pg, err)
	}
	// A cursor past every entry (the rest was removed): an empty last page.
	if pg, err := Of(list[:2], ident, "s", Encode("s", "c"), 2, false, nil); err != nil || pg.NextCursor != "" || len(pg.Items) != 0 {
		t.Fatalf("past the end: %+v %v", pg, err)
	}
}

// A cursor of another list, garbage, or naming no position the list could hold is a 400
// naming `cursor`; a limit below 1 a 400 naming `limit`.
func TestOfRefusesWhatDoesNotFit(t *testing.T) {
	list := []string{"a", "b"}
	digits := func(s string) bool { return strings.Trim(s, "0123456789") == "" }
	for name, cursor := range map[string]string{
		"another scope": Encode("other", "a"),
		"not base64url": "!!",
		"tag only":      "AAAA",
	} {
		_, err := Of(list, ident, "s", cursor, 2, false, nil)
		wantParam(t, name, err, "query:cursor")
	}
	_, err := Of(list, ident, "s", Encode("s", "x1"), 2, false, digits)
	wantParam(t, "invalid position", err, "query:cursor")
	_, err = Of(list, ident, "s", "", 0, false, nil)
	wantParam(t, "limit 0", err, "query:limit")
	if pos, err := Decode("s", Encode("s", "a|b c")); err != nil || pos != "a|b c" {
		t.Fatalf("round trip: %q %v", pos, err)
	}
	if c := Encode("s", "x"); strings.Trim(c, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
		t.Fatalf("cursor %q is not base64url", c)
	}
}

func wantParam(t *testing.T, name string, err error, param string) {
	t.Helper()
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Kind != apperr.Validation || len(ae.Fields) != 1 || ae.Fields[0].Parameter != param {
		t.Errorf("%s: %v, want a validation error naming %s", name, err, param)
	}
}
