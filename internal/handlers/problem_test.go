package handlers

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBoundedKeepsUTF8Valid(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"a" + strings.Repeat("é", 200), strings.Repeat("€", 150), "bad\xffbytes" + strings.Repeat("x", 400)} {
		for _, f := range []func(string) string{clip, safePath, bindDetail} {
			if got := f(s); !utf8.ValidString(got) || len(got) > 300+3 {
				t.Fatalf("%q… → %d bytes, valid UTF-8 %v", s[:10], len(got), utf8.ValidString(got))
			}
		}
	}
}
