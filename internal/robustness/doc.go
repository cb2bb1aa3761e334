// Package robustness checks the gateway as Jepsen and etcd's robustness tests do (test files
// only): concurrent HTTP clients drive two or three gateway replicas, each built through
// internal/app on its own loopback listener or run as a cmd/gateway process, over a Redis
// primary with a replica (reached through a floating address, or through three Sentinels), or
// over a replicated cluster, while a fault schedule runs (a primary crash with failover, a
// partition between primary and replica before it, Sentinels split into a majority and a
// minority isolated with the primary and a gateway still writing to it, a slot migration then
// a master crash and the crashed node back as a replica, in cycles, a cluster master cut off
// with one gateway or frozen past cluster-node-timeout and failed over by the cluster itself,
// a Redis stall, a primary
// or a gateway process frozen by SIGSTOP, a primary frozen through a Sentinel failover and
// woken as a zombie, a gateway cut off from the primary, SIGKILLed and restarted, or with its
// clock stepped; with the default durability, with durability off as the controls that must
// show a violation, with min-replicas-to-write, and, in the settings' matrix, every loss
// scenario under each durability setting).
// Every operation's call time, return time and result are recorded, and each history is
// checked for linearizability with Porcupine against a model: sessions and tokens (no
// authorization that starts after an acknowledged revocation, logout, rotation or MFA verify
// succeeds with the old credential, on any replica; none before the verify of a login that
// waits for MFA), evictions at the per-user session cap (an acknowledged eviction holds on
// every replica; no more than the cap of a user's sessions authorize after the create that
// made room, but during a cut, where creates that evict nothing may live on a copy the
// failover discards), quote drafts (a register with compare-and-set by
// If-Match, submitted at most once), escalation cases (every transition valid from the state
// the history implies, automatic escalation at most once, and exactly once for the watched
// cases) and idempotent creates (one object per Idempotency-Key). Clients of their own, on
// replicas with request-rate limits on, check the admitted requests per window against each
// limit: per tenant, per token and per session. TestRobustnessEvents checks issue 26's atomicity under faults the same way but
// against the end state: cmd/gateway processes SIGKILLed and Redis primaries failed over
// during thousands of writes, then every change has its event and every event its change
// (events_check_test.go). See docs/ROBUSTNESS.md.
//
// The tests skip when the Redis 8 executables are not provided (source .cache/redis/env.sh, or
// run `make test`), and fail then under CI=true. `make robustness` runs the long schedule.
package robustness
