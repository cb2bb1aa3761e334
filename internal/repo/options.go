package repo

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/store"
)

// ErrBadOptions reports a store option that cannot work (no store, no key prefix or hasher, a
// bound outside its range): the gateway refuses to start with it.
var ErrBadOptions = errors.New("repo: bad options")

// CheckBase refuses what no store can work without: a Redis store, a key prefix (it heads every
// key: not empty, without ':', '{', '}' or spaces), and the hashers it is given (a store that
// derives key tags from ids needs one; the session store's tags come in the token). what names
// the store's objects in the error ("quotes").
func CheckBase(what string, s *store.Store, prefix string, hashers ...*keyhash.Hasher) error {
	switch {
	case s == nil || s.Client == nil:
		return fmt.Errorf("%w: %s need a store", ErrBadOptions, what)
	case prefix == "" || strings.ContainsAny(prefix, ":{} "):
		return fmt.Errorf("%w: %s need a key prefix without ':', '{', '}' or spaces, not %q", ErrBadOptions, what, prefix)
	}
	for _, h := range hashers {
		if h == nil {
			return fmt.Errorf("%w: %s need a hasher", ErrBadOptions, what)
		}
	}
	return nil
}

// Base is what every store holds, whatever its domain: the Redis client, the key names under
// its prefix, the hasher of its key tags, its metrics and its logger. A store embeds it and
// builds it with NewBase.
type Base struct {
	Client  rueidis.Client
	Keys    Keys
	Hasher  *keyhash.Hasher
	Metrics *Metrics
	Log     *slog.Logger // never nil: NewBase discards what a store is given none for
}

// NewBase checks what every store needs (CheckBase, with hasher h) and builds the Base of a
// store of what on s.
func NewBase(what string, s *store.Store, prefix string, h *keyhash.Hasher, m *Metrics, log *slog.Logger) (Base, error) {
	if err := CheckBase(what, s, prefix, h); err != nil {
		return Base{}, err
	}
	return Base{Client: s.Client, Keys: Keys{Prefix: prefix}, Hasher: h, Metrics: m,
		Log: cmp.Or(log, slog.New(slog.DiscardHandler))}, nil
}

// DefaultWithin applies a store option's default and checks its range: *v becomes def when it
// is zero, and a value outside lo..hi is refused (ErrBadOptions) under the option's name.
func DefaultWithin[T cmp.Ordered](name string, v *T, def, lo, hi T) error {
	*v = cmp.Or(*v, def)
	if *v < lo || *v > hi {
		return fmt.Errorf("%w: %s %v not within %v..%v", ErrBadOptions, name, *v, lo, hi)
	}
	return nil
}

// DefaultAtLeast is DefaultWithin for an option bounded only from below.
func DefaultAtLeast[T cmp.Ordered](name string, v *T, def, lo T) error {
	*v = cmp.Or(*v, def)
	if *v < lo {
		return fmt.Errorf("%w: %s %v is under %v", ErrBadOptions, name, *v, lo)
	}
	return nil
}
