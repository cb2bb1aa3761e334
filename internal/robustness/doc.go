// Package robustness checks the gateway as Jepsen and etcd's robustness tests do (test files
// only): concurrent HTTP clients drive two or three gateway replicas, each built through
// internal/app on its own loopback listener, over a Redis primary with a replica while a fault
// schedule runs (a primary crash with failover, a partition between primary and replica before
// it; with the default durability, with durability off as the control that must show a
// violation, and with min-replicas-to-write). Every operation's call time, return time and result are recorded, and each history is
// checked for linearizability with Porcupine against a model: sessions and tokens (no
// authorization that starts after an acknowledged revocation, logout or rotation succeeds with
// the old credential, on any replica) and quote drafts (a register with compare-and-set by
// If-Match, submitted at most once). See docs/ROBUSTNESS.md.
//
// The tests skip when the Redis 8 executables are not provided (source .cache/redis/env.sh, or
// run `make test`), and fail then under CI=true. `make robustness` runs the long schedule.
package robustness
