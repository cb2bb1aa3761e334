package accessrules

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// FuzzNormalizedPath: NormalizePath never panics, its result is a fixed point, and no
// equivalent spelling of a path (letter case, percent-encoding of any byte, double encoding,
// ./ and x/../ segments, repeated slashes, ;parameters, trailing dots, backslashes) is decided
// by another rule than the path itself.
func FuzzNormalizedPath(f *testing.F) {
	for _, s := range []string{"/admin", "/admin/users", "/public/app.js", "/reports/q1/pdf", "/files/a.json", "/", "/a/b/c", "/%25", "/100%25off", "/%23", "/a%3fb"} {
		f.Add(s, uint64(1))
	}
	set := exampleSet(f)
	f.Fuzz(func(t *testing.T, path string, seed uint64) {
		norm, ok := NormalizePath(path)
		if !ok {
			return
		}
		if again, ok := NormalizePath(norm); !ok || again != norm {
			t.Fatalf("NormalizePath(%q) = %q, normalized again %q, %v", path, norm, again, ok)
		}
		want := set.Decide(Request{Method: "GET", Host: "app.example.com", URI: norm})
		rng := rand.New(rand.NewPCG(seed, seed>>7))
		for range 4 {
			v := respell(rng, norm)
			got := set.Decide(Request{Method: "GET", Host: "app.example.com", URI: v})
			if got != want {
				t.Fatalf("%q (spelling of %q) decided by %s, %q by %s", v, norm, got.Label(), norm, want.Label())
			}
		}
	})
}

// respell writes the normalized path p another way an upstream reads as p.
func respell(rng *rand.Rand, p string) string {
	var b strings.Builder
	b.WriteByte('/') // a request-target starts with a literal slash
	segs := strings.Split(p[1:], "/")
	if p == "/" {
		segs = nil
	}
	for _, seg := range segs {
		b.WriteString(sep(rng))
		if rng.IntN(4) == 0 {
			b.WriteString(".")
			b.WriteString(sep(rng))
		}
		if rng.IntN(4) == 0 {
			b.WriteString("zz")
			b.WriteString(sep(rng))
			b.WriteString(dots(rng))
			b.WriteString(sep(rng))
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			if c == '%' { // the normal form's %25, %23 or %3f, a literal %, # or ?: spelled once or twice encoded
				esc := seg[i+1 : i+3]
				b.WriteString([]string{"%" + esc, "%25" + esc}[rng.IntN(2)])
				i += 2
				continue
			}
			switch rng.IntN(6) {
			case 0:
				fmt.Fprintf(&b, "%%%02X", c)
			case 1:
				fmt.Fprintf(&b, "%%25%02x", c)
			case 2:
				if 'a' <= c && c <= 'z' {
					c -= 'a' - 'A'
				}
				b.WriteByte(c)
			default:
				b.WriteByte(c)
			}
		}
		switch rng.IntN(4) {
		case 0:
			b.WriteString(";jsessionid=x")
		case 1:
			b.WriteString(".")
		}
	}
	if rng.IntN(2) == 0 {
		b.WriteString(sep(rng))
	}
	if rng.IntN(3) == 0 {
		b.WriteString("?q=/admin")
	}
	return b.String()
}

func sep(rng *rand.Rand) string {
	return []string{"/", "//", `\`, "%2F", "%2f", "%5C", "/./"}[rng.IntN(7)]
}

func dots(rng *rand.Rand) string {
	return []string{"..", "%2e%2e", "%2E.", "..;", "%252e%252e"}[rng.IntN(5)]
}
