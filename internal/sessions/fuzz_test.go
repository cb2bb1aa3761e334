package sessions

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/hashgate/hashgate/internal/sessions/session"
)

// FuzzParseToken: session-token parsing never panics, accepts only the token format (one
// canonical spelling per secret), and derives the reference from the token's SHA-256.
func FuzzParseToken(f *testing.F) {
	tok, _, err := newToken("AbCdEfGhIj_-")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{tok, "", "hgs_", tok[:len(tok)-1], tok + "A", "hgs_AbCdEfGhIj_-_" + strings.Repeat("A", 43),
		"hgs_AbCdEfGhIj_-_" + strings.Repeat("B", 43), "hgs_{bad}tagxx_" + strings.Repeat("A", 43), strings.Repeat("\xff", TokenLen)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ref, id, ok := parseToken(s)
		if !ok {
			if ref != (session.Ref{}) || id != "" {
				t.Fatalf("refused %q but returned %+v %q", s, ref, id)
			}
			return
		}
		if id != ref.ID() {
			t.Fatalf("%q: id %q, ref.ID() %q", s, id, ref.ID())
		}
		if len(s) != TokenLen || !strings.HasPrefix(s, tokenPrefix) || s[len(tokenPrefix)+session.TagLen] != '_' {
			t.Fatalf("accepted %q, which is not in the token format", s)
		}
		random := s[len(s)-tokenRandLen:]
		b, err := base64.RawURLEncoding.Strict().DecodeString(random)
		if err != nil || len(b) != tokenRandBytes || base64.RawURLEncoding.EncodeToString(b) != random {
			t.Fatalf("accepted %q whose secret is not one canonical base64url spelling of 32 bytes", s)
		}
		sum := sha256.Sum256([]byte(s))
		if ref.Tag != s[len(tokenPrefix):len(tokenPrefix)+session.TagLen] || ref.Part != base64.RawURLEncoding.EncodeToString(sum[:14])[:session.PartLen] {
			t.Fatalf("reference %+v does not derive from %q", ref, s)
		}
		if back, ok := session.ParseID(ref.ID()); !ok || back != ref {
			t.Fatalf("session id %q does not parse back", ref.ID())
		}
	})
}
