package accessrules

import (
	"fmt"
	"strings"
)

// maxDoubleStars bounds the `**` of one path pattern, so a match stays cheap (each `**` tries
// every suffix of the path).
const maxDoubleStars = 2

// pathPattern is a compiled path glob: its segments, `**` standing for any number of segments
// (none too), `*` inside a segment for any run of characters within it.
type pathPattern []string

// compilePath compiles a path glob written in normal form's terms: it starts with a slash, is
// matched case-insensitively, and holds no %, ;, \, ?, dot segment or empty segment (the path
// it is matched against never does).
func compilePath(p string) (pathPattern, error) {
	if p == "" || p[0] != '/' {
		return nil, fmt.Errorf("path %q must start with /", p)
	}
	if i := strings.IndexAny(p, `%;\?#`); i >= 0 {
		return nil, fmt.Errorf("path %q holds %q: write the decoded path (rules match the normalized path)", p, p[i])
	}
	var segs pathPattern
	stars := 0
	for seg := range strings.SplitSeq(strings.ToLower(p[1:]), "/") {
		switch {
		case seg == "":
			continue // the root, a trailing slash or a repeated one: merged, as in paths
		case strings.TrimRight(seg, ".") != seg:
			return nil, fmt.Errorf("path %q has a segment ending in a dot (%q): normalized paths have none", p, seg)
		case seg == "**":
			if stars++; stars > maxDoubleStars {
				return nil, fmt.Errorf("path %q has more than %d `**`", p, maxDoubleStars)
			}
		case strings.Contains(seg, "**"):
			return nil, fmt.Errorf("path %q: `**` must be a whole segment", p)
		}
		segs = append(segs, seg)
	}
	return segs, nil
}

// match reports whether the normalized path p matches.
func (pp pathPattern) match(p string) bool { return matchSegs(pp, p[1:]) }

// matchSegs matches the pattern segments against rest, the path's segments joined by slashes
// ("" for none), without allocating.
func matchSegs(pat []string, rest string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			pat = pat[1:]
			if len(pat) == 0 {
				return true
			}
			for {
				if matchSegs(pat, rest) {
					return true
				}
				if rest == "" {
					return false
				}
				_, rest = cutSeg(rest)
			}
		}
		if rest == "" {
			return false
		}
		seg, next := cutSeg(rest)
		if !wild(pat[0], seg) {
			return false
		}
		pat, rest = pat[1:], next
	}
	return rest == ""
}

func cutSeg(rest string) (seg, next string) {
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return rest[:i], rest[i+1:]
	}
	return rest, ""
}

// wild matches s against pattern, where `*` is any run of characters.
func wild(pattern, s string) bool {
	star, mark := -1, 0
	pi, si := 0, 0
	for si < len(s) {
		switch {
		case pi < len(pattern) && pattern[pi] == '*':
			star, mark = pi, si
			pi++
		case pi < len(pattern) && pattern[pi] == s[si]:
			pi++
			si++
		case star >= 0:
			pi, mark = star+1, mark+1
			si = mark
		default:
			return false
		}
	}
	for pi < len(pattern) && pattern[pi] == '*' {
		pi++
	}
	return pi == len(pattern)
}

// hostPattern is a host name, or `*.` and a domain for any name below it.
type hostPattern string

func compileHost(h string) (hostPattern, error) {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	rest := strings.TrimPrefix(h, "*.")
	if rest == "" || strings.ContainsAny(rest, "*/:@ ") {
		return "", fmt.Errorf("host %q: write a host name (no port), or *. and a domain", h)
	}
	return hostPattern(h), nil
}

func (hp hostPattern) match(host string) bool {
	if d, ok := strings.CutPrefix(string(hp), "*."); ok {
		return len(host) > len(d)+1 && host[len(host)-len(d)-1] == '.' && host[len(host)-len(d):] == d
	}
	return host == string(hp)
}

// NormalizeHost is the host rules match: lower-cased, without port and trailing dot. A host
// already in that form is returned as is.
func NormalizeHost(h string) string {
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.Contains(h[i:], "]") {
		h = h[:i]
	}
	h = strings.TrimSuffix(h, ".")
	for i := 0; i < len(h); i++ {
		if c := h[i]; c >= 'A' && c <= 'Z' {
			return strings.ToLower(h)
		}
	}
	return h
}
