package tokens_test

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/repo/tokenstore"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testauth"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

// down answers every command as a refused connection: Redis unreachable, nothing cached.
type down struct{ rueidis.Client }

func refused() rueidis.RedisResult {
	return rueidis.NewErrorResult(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})
}

func (down) Do(context.Context, rueidis.Completed) rueidis.RedisResult { return refused() }
func (down) DoCache(context.Context, rueidis.Cacheable, time.Duration) rueidis.RedisResult {
	return refused()
}

// failing answers every command with an error the token check does not expect (neither a
// refusal nor Redis unavailable).
type failing struct{ rueidis.Client }

var errUnexpected = errors.New("an unexpected driver failure")

func (failing) Do(context.Context, rueidis.Completed) rueidis.RedisResult {
	return rueidis.NewErrorResult(errUnexpected)
}
func (failing) DoCache(context.Context, rueidis.Cacheable, time.Duration) rueidis.RedisResult {
	return rueidis.NewErrorResult(errUnexpected)
}

// env is what several gateway replicas share: signing keys, the HMAC key and the key prefix.
type env struct {
	auth   *auth.Authority
	keys   *auth.KeySet
	hasher *keyhash.Hasher
	prefix string
}

func newEnv(t testing.TB, prefix string) env {
	t.Helper()
	ks := testauth.Keys(t)
	a := testauth.New(t, auth.Options{Keys: ks})
	h, _, err := keyhash.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return env{auth: a, keys: ks, hasher: h, prefix: prefix}
}

// service builds one replica's token service over client (s.Client when nil).
func (e env) service(t testing.TB, s *store.Store, client rueidis.Client, o tokens.Options) *tokens.Service {
	t.Helper()
	if client != nil {
		cp := *s
		cp.Client = client
		s = &cp
	}
	r, err := tokenstore.New(s, tokenstore.Options{Prefix: e.prefix, Hasher: e.hasher, SafetyWindow: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if o.MaxTTL == 0 {
		o.MaxTTL = 24 * time.Hour
	}
	svc, err := tokens.New(e.auth, r, o)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// peer opens a second connection to the same Redis as s, as another gateway replica would:
// with client-side caching on where the backend supports it.
func peer(t *testing.T, b testredis.Backend, s *store.Store, prefix string) *store.Store {
	t.Helper()
	if !s.Caps.Embedded {
		return testredis.Open(t, b, b.Tracking(prefix))
	}
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.EmbeddedAddr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &store.Store{Client: store.WithTimeout(c, time.Second), Caps: s.Caps, Timeout: time.Second}
}

func bearer(scopes ...string) *auth.Principal {
	return &auth.Principal{Kind: auth.KindBearer, Subject: "admin", Tenant: "acme", Scopes: scopes}
}
