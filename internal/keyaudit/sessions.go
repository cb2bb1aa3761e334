package keyaudit

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/redis/rueidis"
)

// A user's session hash in the per-user layout (docs/KEYS.md "Sessions"): each session's
// fields are "<idPart>:<name>", and every one of them carries a field TTL (the session's idle
// window, the live challenge's own): a session field without one would outlive its session.
var userSessionsKey = regexp.MustCompile(`:v1:sess:\{[^{}]*\}$`)

// checkSessionFields checks the session fields among a user's session hash's field names and
// values (alternating, as payload answers them): each has a field TTL (HPTTL).
func checkSessionFields(ctx context.Context, c rueidis.Client, key string, values []string) []Violation {
	if !userSessionsKey.MatchString(key) {
		return nil
	}
	var names []string
	for i := 0; i+1 < len(values); i += 2 {
		if strings.Contains(values[i], ":") {
			names = append(names, values[i])
		}
	}
	for from := 0; from < len(names); from += 500 {
		batch := names[from:min(from+500, len(names))]
		ttls, err := c.Do(ctx, c.B().Hpttl().Key(key).Fields().Numfields(int64(len(batch))).Field(batch...).Build()).AsIntSlice()
		if err != nil {
			return []Violation{{Key: key, Rule: "error", Msg: fmt.Sprintf("HPTTL: %v", err)}}
		}
		for i, ttl := range ttls {
			if ttl == -1 {
				return []Violation{{Key: key, Rule: "no-ttl", Msg: fmt.Sprintf("session field %s has no field TTL", batch[i])}}
			}
		}
	}
	return nil
}
