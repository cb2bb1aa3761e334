package repo

import (
	"context"
	"errors"
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
	s := &store.Store{Client: testredis.Open(t, testredis.Backends()[0]).Client}
	h, _, err := keyhash.Generate()
	if err != nil {
		t.Fatal(err)
	}
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
