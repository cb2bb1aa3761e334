package auth

import (
	"strings"
	"testing"
	"time"
)

func TestNewTokenID(t *testing.T) {
	t.Parallel()
	times := []time.Time{
		time.UnixMilli(0),
		time.UnixMilli(1),
		time.UnixMilli(31),
		time.UnixMilli(32),
		t0,
		t0.Add(time.Millisecond),
		t0.Add(time.Second),
		t0.Add(24 * time.Hour),
		time.UnixMilli(1<<48 - 1), // year 10889: the largest 48-bit timestamp
	}
	prev := ""
	for _, tm := range times {
		id := NewTokenID(tm)
		if len(id) != 26 {
			t.Fatalf("NewTokenID(%v) = %q: length %d, want 26", tm, id, len(id))
		}
		if strings.Trim(id, crockford) != "" {
			t.Fatalf("NewTokenID(%v) = %q: characters outside the lower-case Crockford alphabet", tm, id)
		}
		if want := encodeMillis(tm.UnixMilli()); id[:10] != want {
			t.Errorf("NewTokenID(%v) prefix = %q, want %q", tm, id[:10], want)
		}
		if id <= prev {
			t.Errorf("NewTokenID(%v) = %q, not after previous %q", tm, id, prev)
		}
		prev = id
	}
}

func TestNewTokenIDUnique(t *testing.T) {
	t.Parallel()
	seen := make(map[string]bool)
	for range 1000 {
		id := NewTokenID(t0) // same millisecond: uniqueness from the 80 random bits
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
	}
}

// encodeMillis is an independent reference encoding of a 48-bit timestamp
// as 10 Crockford base32 characters (ULID's timestamp part).
func encodeMillis(ms int64) string {
	out := make([]byte, 10)
	for i := 9; i >= 0; i-- {
		out[i] = crockford[ms%32]
		ms /= 32
	}
	return string(out)
}
