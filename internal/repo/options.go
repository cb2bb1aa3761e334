package repo

import (
	"errors"
	"fmt"

	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/store"
)

// ErrBadOptions reports a store option that cannot work (no store, no key prefix or hasher, a
// bound outside its range): the gateway refuses to start with it.
var ErrBadOptions = errors.New("repo: bad options")

// CheckBase refuses what no store can work without: a Redis store, a key prefix, a hasher.
// what names the store's objects in the error ("quotes").
func CheckBase(what string, s *store.Store, prefix string, h *keyhash.Hasher) error {
	switch {
	case s == nil || s.Client == nil:
		return fmt.Errorf("%w: %s need a store", ErrBadOptions, what)
	case prefix == "" || h == nil:
		return fmt.Errorf("%w: %s need a key prefix and a hasher", ErrBadOptions, what)
	}
	return nil
}
