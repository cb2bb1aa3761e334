// Package faults holds the gateway's cluster and fault tests (test files only): the whole HTTP
// stack, wired as cmd/gateway wires it and served by a real HTTP server on loopback, is driven
// by concurrent clients while a private Redis is disturbed — a slot of a private 3-master
// cluster moved under load, a standalone Redis killed and restarted, and a Redis paused or
// put to sleep. The tests assert the contracts that matter to callers: failures are 503
// problems with Retry-After within the configured Redis timeout (no hang, no 500), failure
// runs are shorter than the retry window, readiness follows Redis, the gateway recovers by
// itself, no goroutines leak, and no acknowledged write is lost.
//
// Each test starts its own Redis processes (internal/testredis) and skips when the Redis 8
// executables are not provided (source .cache/redis/env.sh, or run `make test`).
package faults
