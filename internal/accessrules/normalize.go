package accessrules

import (
	"strings"
	"unicode/utf8"
)

// maxDecodeRounds bounds the percent-decoding rounds of NormalizePath: a path still changing
// after that many is refused rather than guessed at.
const maxDecodeRounds = 8

// literalEscaper writes back the characters a decoded path may hold that a request-target
// reads otherwise (a literal %, and # or ? that would end the path), so the normal form
// normalizes to itself.
var literalEscaper = strings.NewReplacer("%", "%25", "#", "%23", "?", "%3f")

// NormalizePath returns the path an upstream may read a request-target as, the one the rules
// decide on: the query and fragment dropped (an absolute-form target reduced to its path),
// percent-encodings decoded until none is left (%2F is a slash and %2e a dot, as many
// upstreams decode them, and a double encoding decodes twice), backslashes read as slashes,
// `;` parameters dropped from each segment (/admin;x=1/ is /admin/, ..;/ is ../), dot
// segments resolved (never above the root), repeated slashes merged, trailing dots dropped
// from a segment (/admin./ is /admin/), and the whole lower-cased, without a trailing slash; a
// literal %, # or ? left once decoded is written %25, %23 or %3f (/100%25off stays
// /100%25off).
// ok is false for a target that is not a path or holds an invalid percent-encoding in the
// first round, invalid UTF-8 or a control character once decoded: such a request is denied.
// A path already in normal form is returned as is, without allocating.
func NormalizePath(raw string) (string, bool) {
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i]
	}
	if raw == "" || raw[0] != '/' {
		p, ok := absolutePath(raw)
		if !ok {
			return "", false
		}
		raw = p
	}
	if isNormal(raw) {
		return raw, true
	}
	p, ok := unescape(raw, true)
	if !ok {
		return "", false
	}
	for round := 1; strings.IndexByte(p, '%') >= 0; round++ {
		next, _ := unescape(p, false)
		if next == p {
			break
		}
		if round == maxDecodeRounds {
			return "", false
		}
		p = next
	}
	if !utf8.ValidString(p) {
		return "", false
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == 0x7f {
			return "", false
		}
	}
	p = strings.ToLower(strings.ReplaceAll(p, `\`, "/"))
	segs := make([]string, 0, strings.Count(p, "/"))
	for seg := range strings.SplitSeq(p[1:], "/") {
		if i := strings.IndexByte(seg, ';'); i >= 0 {
			seg = seg[:i]
		}
		switch {
		case seg == "..":
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
			continue
		}
		if seg = strings.TrimRight(seg, "."); seg != "" {
			segs = append(segs, seg)
		}
	}
	return literalEscaper.Replace("/" + strings.Join(segs, "/")), true
}

// isNormal reports whether p (starting with a slash) is already in NormalizePath's form: only
// lower-case printable ASCII but %, ; and \, no empty, dot or dot-ended segment, no trailing
// slash.
func isNormal(p string) bool {
	if p == "/" {
		return true
	}
	prev := byte(0)
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c <= 0x20 || c >= 0x7f, c >= 'A' && c <= 'Z', c == '%', c == ';', c == '\\':
			return false
		case c == '/' && (prev == '/' || prev == '.'):
			return false
		}
		prev = c
	}
	return prev != '/' && prev != '.'
}

// absolutePath is the path of an absolute-form target (http://host/path, any case of the
// scheme): "/" when it has none.
func absolutePath(raw string) (string, bool) {
	lower := strings.ToLower(raw)
	for _, scheme := range []string{"http://", "https://"} {
		if strings.HasPrefix(lower, scheme) {
			rest := raw[len(scheme):]
			if i := strings.IndexByte(rest, '/'); i >= 0 {
				return rest[i:], true
			}
			return "/", true
		}
	}
	return "", false
}

// unescape decodes every %XX of s. strict: a % not followed by two hex digits makes s invalid;
// otherwise it stays as it is (a literal % an earlier round decoded).
func unescape(s string, strict bool) (string, bool) {
	n := strings.IndexByte(s, '%')
	if n < 0 {
		return s, true
	}
	b := make([]byte, 0, len(s))
	b = append(b, s[:n]...)
	for i := n; i < len(s); i++ {
		if s[i] == '%' {
			if i+2 < len(s) && ishex(s[i+1]) && ishex(s[i+2]) {
				b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
				i += 2
				continue
			}
			if strict {
				return "", false
			}
		}
		b = append(b, s[i])
	}
	return string(b), true
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
