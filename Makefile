# Thin wrappers; the logic lives in scripts/.
GO ?= go

.PHONY: test test-short generate lint run bench robustness redis-up redis-down compose-secrets

# Full suite with -race against real Redis 8 (standalone + cluster) and Redis 7.0.
test:
	scripts/test.sh

# Quick run: embedded backend only (no real-Redis variables).
test-short:
	env -u HASHGATE_TEST_REDIS8 -u HASHGATE_TEST_REDIS_CLUSTER -u HASHGATE_TEST_REDIS7 $(GO) test -short ./...

generate:
	$(GO) generate ./...

lint:
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

run:
	$(GO) run ./cmd/gateway

# Load benchmark (wrk, private Redis 8, baselines in the same run); see docs/PERFORMANCE.md.
bench:
	scripts/bench.sh $(BENCH_FLAGS)

# Linearizability under faults (docs/ROBUSTNESS.md): every run and the rate-limit control at once, 10 minutes each; histories,
# Porcupine's HTML of a failing one and summary.md under .cache/robustness/<time>/.
# Needs the Redis 8 executables: eval "$$(scripts/redis-env.sh env)". E.g.
# make robustness ROBUSTNESS_FLAGS='-robustness.duration=30m -robustness.seed=42'
ROBUSTNESS_DIR ?= .cache/robustness/$(shell date -u +%Y%m%dT%H%M%SZ)
robustness:
	$(GO) test -count=1 -timeout 3h -parallel 12 -run TestRobustness -v ./internal/robustness/ -args \
	  -robustness.all -robustness.duration=10m -robustness.period=30s -robustness.pace=5ms -robustness.dir=$(abspath $(ROBUSTNESS_DIR)) $(ROBUSTNESS_FLAGS)

# Leave a real-Redis environment running for manual work: eval "$$(scripts/redis-env.sh env)"
redis-up:
	scripts/redis-env.sh up

redis-down:
	scripts/redis-env.sh down

# The compose stack's Redis password (docker-compose.yml, secret redis-password), made once.
compose-secrets:
	@mkdir -p -m 700 .secrets
	@if [ -s .secrets/redis-password ]; then echo "kept .secrets/redis-password"; else \
	  (umask 022; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > .secrets/redis-password) && echo "wrote .secrets/redis-password"; fi
