package repo

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestReplyIsStrict runs scripts that answer every wrong shape on every backend: each is an
// error wrapping ErrReply (never a panic, never a default value).
func TestReplyIsStrict(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, _ string) {
		ctx := context.Background()
		call := func(body string) (Reply, error) {
			return callScript(ctx, s.Client, "test_reply", rueidis.NewLuaScript(body), nil, nil)
		}
		for _, tt := range []struct{ name, body string }{
			{"not an array", "return 5"},
			{"a string", "return 'OK'"},
			{"empty", "return {}"},
			{"code is an integer", "return {1, 2}"},
			{"code is nil", "return {false, 2}"},
			{"unknown code", "return {'MAYBE'}"},
			{"lower-case code", "return {'ok'}"},
		} {
			if _, err := call(tt.body); !errors.Is(err, ErrReply) {
				t.Errorf("%s: err = %v, want ErrReply", tt.name, err)
			}
		}

		// A driver error is not a reply error: callers classify it (unavailable, wrong type).
		if _, err := call("return redis.error_reply('ERR boom')"); err == nil || errors.Is(err, ErrReply) {
			t.Errorf("error reply: err = %v", err)
		}

		rep, err := call("return {'OK', 7, 'seven', false, {1}}")
		if err != nil || rep.Code() != CodeOK || rep.Len() != 4 {
			t.Fatalf("reply %+v, %v", rep, err)
		}
		if n, err := rep.Int(0); n != 7 || err != nil {
			t.Errorf("Int(0) = %d, %v", n, err)
		}
		if s, err := rep.Str(1); s != "seven" || err != nil {
			t.Errorf("Str(1) = %q, %v", s, err)
		}
		if s, ok, err := rep.OptStr(2); s != "" || ok || err != nil {
			t.Errorf("OptStr(2) = %q, %v, %v", s, ok, err)
		}
		if s, ok, err := rep.OptStr(1); s != "seven" || !ok || err != nil {
			t.Errorf("OptStr(1) = %q, %v, %v", s, ok, err)
		}
		wrong := map[string]error{
			"Want(3)":        rep.Want(3),
			"Want(5)":        rep.Want(5),
			"WantAtLeast(5)": rep.WantAtLeast(5),
			"Unexpected":     rep.Unexpected(),
		}
		for i, name := range []string{"string", "nil", "array", "past the end", "negative"} {
			idx := []int{1, 2, 3, 4, -1}[i]
			_, err := rep.Int(idx)
			wrong["Int "+name] = err
		}
		for i, name := range []string{"integer", "nil", "array", "past the end"} {
			idx := []int{0, 2, 3, 4}[i]
			_, err := rep.Str(idx)
			wrong["Str "+name] = err
		}
		for i, name := range []string{"integer", "array", "past the end"} {
			_, _, err := rep.OptStr([]int{0, 3, 4}[i])
			wrong["OptStr "+name] = err
		}
		_, err = rep.Strs(1)
		wrong["Strs over nil"] = err
		_, err = rep.Strs(5)
		wrong["Strs past the end"] = err
		for name, err := range wrong {
			if !errors.Is(err, ErrReply) {
				t.Errorf("%s: err = %v, want ErrReply", name, err)
			}
		}
		if err := rep.Want(4); err != nil {
			t.Errorf("Want(4): %v", err)
		}

		// The Reader keeps the first error and still returns zero values.
		d := rep.Reader()
		n, str, opt := d.Int(0), d.Str(0), d.Int(1)
		if n != 7 || str != "" || opt != 0 || !errors.Is(d.Err(), ErrReply) || !strings.Contains(d.Err().Error(), "value 0 is not a string") {
			t.Errorf("reader: %d %q %d %v", n, str, opt, d.Err())
		}

		// NOT_FOUND with a payload, where a script declares none.
		rep, err = call("return {'NOT_FOUND', 1}")
		if err != nil {
			t.Fatal(err)
		}
		if err := rep.Bare(CodeNotFound, CodeExists); !errors.Is(err, ErrReply) {
			t.Errorf("bare NOT_FOUND with a payload: %v", err)
		}
		if err := rep.Bare(CodeExists); err != nil {
			t.Errorf("bare on another code: %v", err)
		}

		// StrMap reads an HGETALL answer; anything but string pairs is refused.
		rep, err = call("return {'OK', {'a', '1', 'b', '2'}, {'a'}, {'a', 1}, 'x'}")
		if err != nil {
			t.Fatal(err)
		}
		if m, err := rep.StrMap(0); err != nil || len(m) != 2 || m["a"] != "1" || m["b"] != "2" {
			t.Errorf("StrMap(0) = %v, %v", m, err)
		}
		for i := 1; i <= 4; i++ {
			if _, err := rep.StrMap(i); !errors.Is(err, ErrReply) {
				t.Errorf("StrMap(%d): %v, want ErrReply", i, err)
			}
		}

		// Strs reads the rest when all are strings.
		rep, err = call("return {'RETRY', 2, 'a', 'b'}")
		if err != nil {
			t.Fatal(err)
		}
		if got, err := rep.Strs(1); err != nil || strings.Join(got, ",") != "a,b" {
			t.Errorf("Strs = %v, %v", got, err)
		}
		if got, err := rep.Strs(3); err != nil || len(got) != 0 {
			t.Errorf("Strs(end) = %v, %v", got, err)
		}
	})
}

// TestReplyCodeTable: every code maps to its error kind; OK to none.
func TestReplyCodeTable(t *testing.T) {
	t.Parallel()
	want := map[Code]error{
		CodeOK: nil, CodeNotFound: apperr.NotFound, CodeStale: apperr.PreconditionFailed,
		CodeInvalidStatus: apperr.InvalidStatus, CodeCorrupt: ErrCorrupt, CodeBound: apperr.BoundExceeded,
		CodeRetry: errRetry, CodeExists: ErrExists, CodeLimited: apperr.RateLimited, CodeNoChallenge: apperr.Gone,
		CodeWrongCode: apperr.WrongCode, CodeAlready: ErrAlready, CodeExpired: apperr.Unprocessable,
		CodeIssuerGone: apperr.InvalidCredentials, CodeOutlivesIssuer: apperr.Unprocessable,
		CodeItemNotFound: apperr.NotFound, CodeOverflow: apperr.BoundExceeded, CodeDiscount: apperr.Unprocessable,
		CodeMaxEscalation: apperr.MaxEscalation, CodeGone: apperr.NotFound, CodeNotOpen: apperr.InvalidStatus,
		CodeNotDue: nil, CodeClaimed: nil, CodeQuota: apperr.QuotaExceeded,
	}
	if len(want) != len(codeKinds) {
		t.Fatalf("%d codes in the table, %d tested", len(codeKinds), len(want))
	}
	for c, k := range want {
		err := Reply{script: "s", code: c}.Err("x")
		if k == nil {
			if err != nil {
				t.Errorf("%s: %v", c, err)
			}
			continue
		}
		if !errors.Is(err, k) {
			t.Errorf("%s: %v, want %v", c, err, k)
		}
	}
}

// storeScripts are the script files of every store package below the kit (internal/repo/*/),
// without the snippets some script includes.
func storeScripts(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*/*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no store scripts found: %v", err)
	}
	include := regexp.MustCompile(`(?m)^--#include ([a-z0-9_]+)`)
	snippets := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range include.FindAllStringSubmatch(string(b), -1) {
			snippets[m[1]] = true
		}
	}
	var out []string
	for _, f := range files {
		if !strings.HasPrefix(f, "lua/") && !strings.HasPrefix(f, "testdata/") && !snippets[strings.TrimSuffix(filepath.Base(f), ".lua")] {
			out = append(out, f)
		}
	}
	return out
}

// TestScriptsAnswerKnownCodes: every script, as composed with its snippets, answers only codes
// of the table, answers a code, and its header names its reply. No quote, case or idempotency
// script answers anything but a coded array (or a Redis error): every return at its own top
// level is one, or a snippet's refusal (`refused`, itself a coded array) or draft_save's reply.
func TestScriptsAnswerKnownCodes(t *testing.T) {
	t.Parallel()
	names := storeScripts(t)
	ret := regexp.MustCompile(`(?:return|local out =) \{'([^']*)'`)
	anyReturn := regexp.MustCompile(`\breturn\b\s*(.*)$`)
	coded := regexp.MustCompile(`^(?:\{'[A-Z_]+'|out$|redis\.error_reply\(|refused end$|draft_save\()`)
	checked := 0
	for _, n := range names {
		base := filepath.Base(n)
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		own := string(b)
		body, err := ComposeScript(os.DirFS(filepath.Dir(n)), strings.TrimSuffix(base, ".lua"))
		if errors.Is(err, fs.ErrNotExist) {
			body = own // a snippet written from Go (sessionstore's field lists), not a file: no replies in it
		} else if err != nil {
			t.Fatal(err)
		}
		ms := ret.FindAllStringSubmatch(body, -1)
		if !strings.Contains(body, "-- Reply: {'") {
			t.Errorf("%s: the header does not name the reply's codes", base)
		}
		if len(ms) == 0 {
			t.Errorf("%s: no reply with a code", base)
		}
		for _, m := range ms {
			if _, ok := codeKinds[Code(m[1])]; !ok {
				t.Errorf("%s: unknown reply code %q", base, m[1])
			}
		}
		if strings.HasPrefix(base, "quote_") || strings.HasPrefix(base, "case_") || strings.HasPrefix(base, "idem_") {
			for i, line := range strings.Split(own, "\n") {
				if strings.HasPrefix(strings.TrimSpace(line), "--") || strings.Contains(line, "function") {
					continue // comments; one-line helpers return their own values
				}
				if m := anyReturn.FindStringSubmatch(line); m != nil && !coded.MatchString(m[1]) {
					t.Errorf("%s:%d: returns %q, not a coded reply", base, i+1, m[1])
				}
			}
		}
		checked++
	}
	if checked == 0 || checked != len(names) {
		t.Fatalf("checked %d scripts of %d", checked, len(names))
	}
}
