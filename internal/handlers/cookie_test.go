package handlers

import (
	"net/http"
	"strings"
	"testing"
)

// cookieValue must pick the same cookie as net/http's r.Cookie.
func TestCookieValueMatchesNetHTTP(t *testing.T) {
	t.Parallel()
	const n = SessionCookieName
	for _, lines := range [][]string{
		nil,
		{n + "=abc"},
		{"a=1; " + n + "=abc; b=2"},
		{"a=1;" + n + "=abc"},
		{"  " + n + "=abc  "},
		{n + `="quoted"`},
		{n + "="},
		{n + "=first; " + n + "=second"},
		{n + "=bad\"value; " + n + "=good"},
		{n + "=with space"},
		{n + "=with,comma"},
		{"other=1", n + "=second-line"},
		{n + "x=1; x" + n + "=2"},
		{"garbage", n + "=ok"},
		{n + "=a=b"},
		{n + "=tab\there"},
		{n + "=ünïcode; " + n + "=ascii"},
		{n + " =0"},                               // (found by FuzzCookieValue) net/http trims the name
		{"a=1;\t" + n + "\t = v ; b=2"},           // around the name, not the value
		{strings.Repeat("x=1;", 3000) + n + "=v"}, // more cookies than net/http reads: none
	} {
		r, _ := http.NewRequest("GET", "/", nil)
		for _, l := range lines {
			r.Header.Add("Cookie", l)
		}
		want := ""
		if ck, err := r.Cookie(n); err == nil {
			want = ck.Value
		}
		if got := cookieValue(r, n); got != want {
			t.Errorf("Cookie %.120q: got %q, net/http %q", lines, got, want)
		}
	}
}

func FuzzCookieValue(f *testing.F) {
	f.Add(SessionCookieName + "=abc; x=1")
	f.Add(`a="b"; ` + SessionCookieName + `="v"`)
	f.Fuzz(func(t *testing.T, line string) {
		r, _ := http.NewRequest("GET", "/", nil)
		r.Header.Set("Cookie", line)
		want := ""
		if ck, err := r.Cookie(SessionCookieName); err == nil {
			want = ck.Value
		}
		if got := cookieValue(r, SessionCookieName); got != want {
			t.Fatalf("Cookie %.120q: got %q, net/http %q", line, got, want)
		}
	})
}
