package repo

import "errors"

// ErrBadOptions reports a store option that cannot work (no store, no key prefix or hasher, a
// bound outside its range): the gateway refuses to start with it.
var ErrBadOptions = errors.New("repo: bad options")
