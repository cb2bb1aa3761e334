package sessions

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// FuzzParseToken: session-token parsing never panics, accepts only the token format (one
// canonical spelling per secret), takes the reference from the token's tag and selector, and
// derives the verifier's MAC under the key (a MAC of the id and the verifier).
func FuzzParseToken(f *testing.F) {
	h, _, err := keyhash.Generate()
	if err != nil {
		f.Fatal(err)
	}
	tok, _, _, err := newToken(h, session.Ref{Tag: "AbCdEfGhIj_-"})
	if err != nil {
		f.Fatal(err)
	}
	sel := "_" + strings.Repeat("S", session.PartLen) + "_"
	for _, s := range []string{tok, "", "hgs_", tok[:len(tok)-1], tok + "A", "hgs_AbCdEfGhIj_-" + sel + strings.Repeat("A", 43),
		"hgs_AbCdEfGhIj_-" + sel + strings.Repeat("B", 43), "hgs_{bad}tagxx" + sel + strings.Repeat("A", 43),
		"hgs_AbCdEfGhIj_-_" + strings.Repeat("A", 43), strings.Repeat("\xff", TokenLen)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ref, id, mac, ok := parseToken(h, s)
		if !ok {
			if ref != (session.Ref{}) || id != "" || mac != "" {
				t.Fatalf("refused %q but returned %+v %q %q", s, ref, id, mac)
			}
			return
		}
		if id != ref.ID() {
			t.Fatalf("%q: id %q, ref.ID() %q", s, id, ref.ID())
		}
		if len(s) != TokenLen || !strings.HasPrefix(s, tokenPrefix) || s[selectorAt-1] != '_' || s[verifierAt-1] != '_' {
			t.Fatalf("accepted %q, which is not in the token format", s)
		}
		verifier := s[verifierAt:]
		b, err := base64.RawURLEncoding.Strict().DecodeString(verifier)
		if err != nil || len(b) != verifierBytes || base64.RawURLEncoding.EncodeToString(b) != verifier {
			t.Fatalf("accepted %q whose verifier is not one canonical base64url spelling of 32 bytes", s)
		}
		if ref.Tag != s[len(tokenPrefix):selectorAt-1] || ref.Part != s[selectorAt:verifierAt-1] {
			t.Fatalf("reference %+v is not the tag and selector of %q", ref, s)
		}
		if want := h.Tag(verifierPurpose, verifierMACBytes, ref.Tag, ref.Part, verifier); mac != want || len(mac) != verifierMACLen {
			t.Fatalf("%q: MAC %q, want %q", s, mac, want)
		}
		if back, ok := session.ParseID(ref.ID()); !ok || back != ref {
			t.Fatalf("session id %q does not parse back", ref.ID())
		}
	})
}
