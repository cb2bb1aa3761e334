package repo

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/store"
)

// Helpers shared by the quote, case and idempotency tests.

func qcHasher(t testing.TB) *keyhash.Hasher {
	t.Helper()
	h, err := keyhash.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// qcRequireTTLs scans every node for the test's keys and fails on any key without a TTL.
func qcRequireTTLs(t *testing.T, s *store.Store, prefix string) int {
	t.Helper()
	ctx := context.Background()
	n := 0
	for addr, node := range s.Client.Nodes() {
		var cursor uint64
		for {
			e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(prefix+":*").Count(1000).Build()).AsScanEntry()
			if err != nil {
				t.Fatalf("scan %s: %v", addr, err)
			}
			for _, k := range e.Elements {
				ttl, err := node.Do(ctx, node.B().Pttl().Key(k).Build()).AsInt64()
				if err != nil {
					t.Fatalf("pttl %s: %v", k, err)
				}
				if ttl <= 0 {
					t.Errorf("key %s has no TTL (PTTL %d)", k, ttl)
				}
				n++
			}
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	return n
}

// qcPTTL returns a key's remaining TTL.
func qcPTTL(t *testing.T, s *store.Store, key string) time.Duration {
	t.Helper()
	n, err := s.Client.Do(context.Background(), s.Client.B().Pttl().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(n) * time.Millisecond
}

// qcHSet writes a fixture hash with a TTL (tests only: fixtures in an old or broken shape).
func qcHSet(t *testing.T, s *store.Store, key string, m map[string]string) {
	t.Helper()
	ctx := context.Background()
	cmd := s.Client.B().Hset().Key(key).FieldValue()
	for k, v := range m {
		cmd = cmd.FieldValue(k, v)
	}
	if err := s.Client.Do(ctx, cmd.Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := s.Client.Do(ctx, s.Client.B().Pexpire().Key(key).Milliseconds(time.Hour.Milliseconds()).Build()).Error(); err != nil {
		t.Fatal(err)
	}
}

// qcWantKind fails unless err carries the refusal kind k.
func qcWantKind(t *testing.T, err error, k *apperr.Kind) {
	t.Helper()
	if !errors.Is(err, k) {
		t.Fatalf("err = %v, want %s", err, k.Slug)
	}
}


// hashKey and historyKey are the keys of a case of the tests' tenant, acme.
func (r *Cases) hashKey(id string) string    { return r.caseKeys(r.TenantTag("acme"), id)[0] }
func (r *Cases) historyKey(id string) string { return r.caseKeys(r.TenantTag("acme"), id)[1] }
