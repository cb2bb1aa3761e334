package main

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"
)

// Key names follow docs/KEYS.md; ids returned by the API map to them:
//   session  s_<userTag>_<idPart>  → <prefix>:v1:sess:{<userTag>}:<idPart>
//   device index                   → <prefix>:v1:sessions:{<userTag>}
//   MFA attempt counter            → <prefix>:v1:rl:{<userTag>}:mfa
//   token    <tokenId>             → <prefix>:v1:token:{<tenantTag>}:<tokenId> (found by SCAN:
//                                    the tag is a keyed hash the bench does not compute)
//   quote    q_<id>                → <prefix>:v1:quote:{q_<id>} and …:items
//   case     c_<id>                → <prefix>:v1:case:{c_<id>} and …:history

// sessionParts splits a session id (s_<12-char tag>_<18-char part>, the contract's pattern)
// into its user tag and id part. Both are base64url, so they may contain '_' themselves.
func sessionParts(id string) (tag, part string, ok bool) {
	if len(id) != 33 || id[:2] != "s_" || id[14] != '_' {
		return "", "", false
	}
	return id[2:14], id[15:], true
}

func sessionKey(id string) string {
	tag, part, ok := sessionParts(id)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%s:v1:sess:{%s}:%s", keyPrefix, tag, part)
}

func userKey(id, format string) string {
	tag, _, ok := sessionParts(id)
	if !ok {
		return ""
	}
	return fmt.Sprintf(format, keyPrefix, tag)
}

// memory measures the objects the run created through the API.
func (b *bench) memory(ctx context.Context, fx *fixtures) []memRow {
	var out []memRow
	// measure sums each object's keys (e.g. quote summary + items) and averages over objects.
	measure := func(object string, note string, objects ...[]string) {
		var sum, n, mx int64
		keys := 0
		for _, ks := range objects {
			var total int64
			found := false
			var live []string
			for _, k := range ks {
				if k != "" {
					live = append(live, k)
				}
			}
			sizes, err := memoryUsage(ctx, b.redis.Client, live)
			if err != nil {
				continue
			}
			for _, s := range sizes {
				if s >= 0 {
					total += s
					found = true
				}
			}
			if found {
				sum += total
				n++
				mx = max(mx, total)
				keys = max(keys, len(live))
			}
		}
		r := memRow{Object: object, Bytes: -1, Note: note}
		if n > 0 {
			r.Bytes, r.Max = sum/n, mx
			r.Keys = fmt.Sprintf("%d object(s), %d key(s) each", n, keys)
		} else {
			r.Keys = "none found"
		}
		out = append(out, r)
	}
	if len(fx.sessions) > 0 && fx.sessions[0].ID != "" {
		var ss, idx [][]string
		for _, s := range fx.sessions[:min(100, len(fx.sessions))] {
			ss = append(ss, []string{sessionKey(s.ID)})
			idx = append(idx, []string{userKey(s.ID, "%s:v1:sessions:{%s}")})
		}
		measure("session hash, plain (BASIC, no device info)", "target ≤ 256 B", ss...)
		measure("session hash with device label, user agent, IP", "", []string{sessionKey(fx.device.ID)})
		measure("user's device index (1 session)", "", idx...)
	}
	if len(fx.mfa) > 0 {
		var ss, rl [][]string
		for _, m := range fx.mfa {
			ss = append(ss, []string{sessionKey(m.SessionID)})
			rl = append(rl, []string{userKey(m.SessionID, "%s:v1:rl:{%s}:mfa")})
		}
		measure("session hash with a pending MFA challenge", "challenge fields carry their own TTL", ss...)
		measure("MFA attempt counter", "", rl...)
	}
	ids := fx.tokenIDs
	if len(ids) == 0 && fx.api != nil {
		ids = []string{jwtID(fx.api.token)} // the bootstrap token
	}
	if len(ids) > 0 {
		var ts [][]string
		for _, id := range ids {
			if id != "" {
				ts = append(ts, []string{scanOne(ctx, b.redis.Client, fmt.Sprintf("%s:v1:token:{*}:%s", keyPrefix, id))})
			}
		}
		measure("token metadata hash", "", ts...)
	}
	if q := fx.quoteSample.ID; q != "" {
		k := fmt.Sprintf("%s:v1:quote:{%s}", keyPrefix, q)
		measure(fmt.Sprintf("quote summary + items (%d items)", fx.quoteItems), "", []string{k, k + ":items"})
	}
	for _, c := range []struct{ id, what string }{{fx.caseFresh, "case hash + history, as created"}, {fx.caseUsed, fmt.Sprintf("case hash + history after %d escalations", caseMaxEscalation)}} {
		if c.id != "" {
			k := fmt.Sprintf("%s:v1:case:{%s}", keyPrefix, c.id)
			measure(c.what, "", []string{k, k + ":history"})
		}
	}
	var naive [][]string
	var cursor uint64
	for len(naive) < 100 {
		e, err := b.redis.Client.Do(ctx, b.redis.Client.B().Scan().Cursor(cursor).Match(naiveKeyspace+"*").Count(1000).Build()).AsScanEntry()
		if err != nil {
			break
		}
		for _, k := range e.Elements {
			naive = append(naive, []string{k})
		}
		if cursor = e.Cursor; cursor == 0 {
			break
		}
	}
	if len(naive) > 0 {
		measure("naive seed-004 session hash (for comparison)", "raw token in the key name", naive...)
	}
	return out
}

// scanOne returns the first key matching pattern (SCAN; "" when none).
func scanOne(ctx context.Context, c rueidis.Client, pattern string) string {
	var cursor uint64
	for {
		e, err := c.Do(ctx, c.B().Scan().Cursor(cursor).Match(pattern).Count(1000).Build()).AsScanEntry()
		if err != nil {
			return ""
		}
		if len(e.Elements) > 0 {
			return e.Elements[0]
		}
		if cursor = e.Cursor; cursor == 0 {
			return ""
		}
	}
}
