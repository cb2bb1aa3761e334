package main

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"
)

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
	// In the per-user layout (the default on servers with hash field expiry) a session lives in
	// its user's hash; in the per-session layout in its own hash beside the user's device index.
	perUser := false
	if len(fx.sessions) > 0 {
		if k := userKey(fx.sessions[0].ID, userSessionsKey); k != "" {
			n, err := b.redis.Client.Do(ctx, b.redis.Client.B().Exists().Key(k).Build()).AsInt64()
			perUser = err == nil && n == 1
		}
	}
	sessKey := sessionKey
	if perUser {
		sessKey = func(id string) string { return userKey(id, userSessionsKey) }
	}
	if len(fx.sessions) > 0 && fx.sessions[0].ID != "" {
		var ss, idx [][]string
		for _, s := range fx.sessions[:min(100, len(fx.sessions))] {
			ss = append(ss, []string{sessKey(s.ID)})
			idx = append(idx, []string{userKey(s.ID, sessionDevicesKey)})
		}
		if perUser {
			measure(perUserHashObject+" (BASIC, no device info; per-user layout)", "target ≤ 400 B (a session all-in)", ss...)
			measure("user's session hash, one session with device label, user agent, IP", "", []string{sessKey(fx.device.ID)})
		} else {
			measure("session hash, plain (BASIC, no device info)", "target ≤ 256 B", ss...)
			measure("session hash with device label, user agent, IP", "", []string{sessKey(fx.device.ID)})
			measure("user's device index (1 session)", "", idx...)
		}
	}
	if len(fx.mfa) > 0 {
		var ss, rl [][]string
		for _, m := range fx.mfa {
			ss = append(ss, []string{sessKey(m.SessionID)})
			rl = append(rl, []string{userKey(m.SessionID, mfaCounterKey)})
		}
		measure("session with a pending MFA challenge (its hash)", "challenge fields carry their own TTL", ss...)
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
				ts = append(ts, []string{scanOne(ctx, b.redis.Client, tokenKeyPattern(id))})
			}
		}
		measure("token metadata hash", "", ts...)
	}
	if q := fx.quoteSample.ID; q != "" {
		if k := scanOne(ctx, b.redis.Client, quoteKeyPattern(q)); k != "" {
			measure(fmt.Sprintf("quote summary + items (%d items)", fx.quoteItems), "", []string{k, k + ":items"})
		}
	}
	for _, c := range []struct{ id, what string }{{fx.caseFresh, "case hash + history, as created"}, {fx.caseUsed, fmt.Sprintf("case hash + history after %d escalations", caseMaxEscalation)}} {
		if c.id == "" {
			continue
		}
		if k := scanOne(ctx, b.redis.Client, caseKeyPattern(c.id)); k != "" {
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
