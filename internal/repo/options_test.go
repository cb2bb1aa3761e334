package repo

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestCheckBase: every store's options check refuses a missing store, a prefix that cannot head
// a key, and a missing hasher when the store needs one (the session store needs none).
func TestCheckBase(t *testing.T) {
	t.Parallel()
	s, h := storeAndHasher(t)
	for _, c := range []struct {
		name    string
		s       *store.Store
		prefix  string
		hashers []*keyhash.Hasher
		ok      bool
	}{
		{"complete", s, "hg", []*keyhash.Hasher{h}, true},
		{"no hasher needed", s, "hg", nil, true},
		{"no store", nil, "hg", []*keyhash.Hasher{h}, false},
		{"empty prefix", s, "", []*keyhash.Hasher{h}, false},
		{"prefix with a colon", s, "hg:x", []*keyhash.Hasher{h}, false},
		{"prefix with a brace", s, "h{g}", nil, false},
		{"prefix with a space", s, "h g", nil, false},
		{"missing hasher", s, "hg", []*keyhash.Hasher{nil}, false},
	} {
		err := CheckBase("things", c.s, c.prefix, c.hashers...)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrBadOptions)) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// storeAndHasher are a store on the first test backend and a fresh hasher.
func storeAndHasher(t *testing.T) (*store.Store, *keyhash.Hasher) {
	t.Helper()
	h, _, err := keyhash.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return &store.Store{Client: testredis.Open(t, testredis.Backends()[0]).Client}, h
}

// TestNewBase: a store's base refuses what CheckBase refuses, and a store given no logger logs
// nowhere rather than through a nil one.
func TestNewBase(t *testing.T) {
	t.Parallel()
	s, h := storeAndHasher(t)
	if _, err := NewBase("things", s, "hg", nil, nil, nil); !errors.Is(err, ErrBadOptions) {
		t.Errorf("no hasher: %v, want ErrBadOptions", err)
	}
	b, err := NewBase("things", s, "hg", h, nil, nil)
	if err != nil || b.Log == nil || b.Client != s.Client || b.Keys.Key("thing", "t") != "hg:v1:thing:{t}" {
		t.Fatalf("NewBase = %+v, %v", b, err)
	}
}

// TestTenantQuota: a store's quota option is its default when 0 and refused outside 1..most,
// naming the objects it counts.
func TestTenantQuota(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		limit, want int
		ok          bool
	}{{0, 20, true}, {1, 1, true}, {100, 100, true}, {101, 0, false}, {-1, 0, false}} {
		q, err := TenantQuota("things", "GATEWAY_TENANT_MAX_THINGS", c.limit, 20, 100)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrBadOptions)) || q.Limit != c.want {
			t.Errorf("limit %d: %+v, %v", c.limit, q, err)
		}
		if err == nil && (q.Name != "things" || q.Env != "GATEWAY_TENANT_MAX_THINGS") {
			t.Errorf("limit %d: %+v", c.limit, q)
		}
	}
}

// TestRunScriptWrongTypeIsCorrupt: a script meeting a key of another type where its object
// belongs answers ErrCorrupt, counted as an error of the script, in every store (the kit's one
// way to run a script).
func TestRunScriptWrongTypeIsCorrupt(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	ctx := context.Background()
	key := "kit-test:v1:wrong:{" + time.Now().Format("150405.000000000") + "}"
	if err := s.Client.Do(ctx, s.Client.B().Set().Key(key).Value("x").Px(time.Minute).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Client.Do(context.Background(), s.Client.B().Del().Key(key).Build()) })
	m := NewMetrics(nil)
	l := rueidis.NewLuaScript("return {'OK', redis.call('HGET', KEYS[1], 'f')}")
	_, err := RunScript(ctx, s.Client, m, "test_wrongtype", "thing read", l, []string{key}, nil)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a wrong-typed key: %v, want ErrCorrupt", err)
	}
}

// TestDefaultWithin: a store option that is 0 takes its default, one outside its range is
// refused naming the option, and one within it is kept.
func TestDefaultWithin(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v, want int
		ok      bool
	}{{0, 3, true}, {1, 1, true}, {100, 100, true}, {101, 101, false}, {-1, -1, false}} {
		v := c.v
		err := DefaultWithin("thing max", &v, 3, 1, 100)
		if (err == nil) != c.ok || v != c.want || (err != nil && (!errors.Is(err, ErrBadOptions) || !strings.Contains(err.Error(), "thing max"))) {
			t.Errorf("%d: %d, %v", c.v, v, err)
		}
	}
	for _, c := range []struct {
		v, want time.Duration
		ok      bool
	}{{0, time.Hour, true}, {time.Second, time.Second, true}, {time.Millisecond, time.Millisecond, false}} {
		v := c.v
		err := DefaultAtLeast("thing TTL", &v, time.Hour, time.Second)
		if (err == nil) != c.ok || v != c.want || (err != nil && !errors.Is(err, ErrBadOptions)) {
			t.Errorf("%s: %s, %v", c.v, v, err)
		}
	}
}
