package session

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestParseID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		id   string
		ok   bool
	}{
		{"good", "s_AAAAAAAAAAAA_BBBBBBBBBBBBBBBBBB", true},
		{"underscores in tag", "s_A_A_A_A_A_A__BBBBBBBBBBBBBBBBBB", true},
		{"short", "s_AAAAAAAAAAAA_BBBB", false},
		{"wrong prefix", "t_AAAAAAAAAAAA_BBBBBBBBBBBBBBBBBBBBBB", false},
		{"brace", "s_AAAAAAAAAAA}_BBBBBBBBBBBBBBBBBBBBBB", false},
		{"colon", "s_AAAAAAAAAAAA_BBBBBBBBBBBBBBBBBBBBB:", false},
		{"no separator", "s_AAAAAAAAAAAAXBBBBBBBBBBBBBBBBBBBBBB", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ref, ok := ParseID(tt.id)
			if ok != tt.ok || ok && ref.ID() != tt.id {
				t.Fatalf("ParseID(%q) = %+v, %v", tt.id, ref, ok)
			}
		})
	}
}

// B64URL accepts exactly the base64url alphabet, checked byte by byte over all 256 values.
func TestB64URLAlphabet(t *testing.T) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	if B64URL("") {
		t.Fatal("the empty string accepted")
	}
	for c := range 256 {
		want := strings.IndexByte(alphabet, byte(c)) >= 0
		for _, s := range []string{string([]byte{byte(c)}), "AAAA" + string([]byte{byte(c)}) + "zz"} {
			if B64URL(s) != want {
				t.Errorf("B64URL(%q) = %v, want %v", s, !want, want)
			}
		}
	}
}

// BenchmarkB64URL is the check every session token's tag, selector and verifier pass: 4,096
// different random tokens in turn (73 characters each), as requests bring them.
func BenchmarkB64URL(b *testing.B) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	rng := rand.New(rand.NewPCG(1, 2))
	toks := make([]string, 4096)
	for i := range toks {
		var t [73]byte
		for j := range t {
			t[j] = alphabet[rng.IntN(len(alphabet))]
		}
		toks[i] = string(t[:])
	}
	i := 0
	for b.Loop() {
		if !B64URL(toks[i%len(toks)]) {
			b.Fatal("refused")
		}
		i++
	}
}
