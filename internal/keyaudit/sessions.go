package keyaudit

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/redis/rueidis"
)

// A user's session hash in the per-user layout (docs/KEYS.md "Sessions"): each session's
// fields are "<idPart>:<name>", and every one of them carries a field TTL (the session's idle
// window, the live challenge's own): a session field without one would outlive its session.
var userSessionsKey = regexp.MustCompile(`:v1:sess:\{[^{}]*\}$`)

// maxNamed bounds the field names one violation lists.
const maxNamed = 5

// checkSessionFields checks the session fields among a user's session hash's field names and
// values (alternating, as payload answers them): each has a field TTL. One violation names
// the fields without one.
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
	bare, err := fieldsWithoutTTL(ctx, c, key, names)
	if err != nil {
		return []Violation{{Key: key, Rule: "error", Msg: fmt.Sprintf("HPTTL: %v", err)}}
	}
	if len(bare) == 0 {
		return nil
	}
	slices.Sort(bare)
	named := strings.Join(bare[:min(len(bare), maxNamed)], ", ")
	if len(bare) > maxNamed {
		named += fmt.Sprintf(" and %d more", len(bare)-maxNamed)
	}
	return []Violation{{Key: key, Rule: "no-ttl", Msg: fmt.Sprintf("session field %s has no field TTL", named)}}
}

// fieldsWithoutTTL returns those of key's fields names that have no field TTL (HPTTL -1),
// asking in batches of 500.
func fieldsWithoutTTL(ctx context.Context, c rueidis.Client, key string, names []string) ([]string, error) {
	var bare []string
	for from := 0; from < len(names); from += 500 {
		batch := names[from:min(from+500, len(names))]
		ttls, err := c.Do(ctx, c.B().Hpttl().Key(key).Fields().Numfields(int64(len(batch))).Field(batch...).Build()).AsIntSlice()
		if err != nil {
			return bare, err
		}
		for i, ttl := range ttls {
			if ttl == -1 {
				bare = append(bare, batch[i])
			}
		}
	}
	return bare, nil
}
