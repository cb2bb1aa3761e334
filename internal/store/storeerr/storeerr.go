// Package storeerr holds the one store error services test for: ErrUnavailable, "Redis cannot
// serve right now". It lives apart from internal/store so a service can recognise the error
// (errors.Is) without depending on the Redis client; the stores wrap every connectivity
// failure with it (store.Classify) before it leaves them.
package storeerr

import "errors"

// ErrUnavailable marks an error that means "Redis cannot serve right now": the caller should
// answer 503 with Retry-After, not 500.
var ErrUnavailable = errors.New("redis unavailable")
