package repo

import (
	"errors"
	"fmt"
	"strings"

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
