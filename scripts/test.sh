#!/usr/bin/env bash
# Full test run against real Redis: start the environment (scripts/redis-env.sh up), run
# `go test -race -count=1` with its HASHGATE_TEST_* variables (and those of the reverse
# proxies, scripts/proxy-env.sh) exported, and always stop the environment again. Exits with
# go test's exit code.
#
#   scripts/test.sh                 # go test -race -count=1 ./...
#   scripts/test.sh -run Foo ./internal/store/...   # extra go test arguments
#
# HASHGATE_KEEP_REDIS=1 leaves the environment running afterwards.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
	if [[ ${HASHGATE_KEEP_REDIS:-} == 1 ]]; then
		echo "test.sh: leaving the Redis environment up (HASHGATE_KEEP_REDIS=1)" >&2
		return
	fi
	scripts/redis-env.sh down || echo "test.sh: WARNING: scripts/redis-env.sh down failed" >&2
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

exports=$(scripts/redis-env.sh up)
eval "$exports"
echo "test.sh: real-Redis backends for this run:"
grep -E '^export HASHGATE_TEST_' <<<"$exports" | sed 's/^export /  /'
# Real nginx and Caddy (Debian's packages, extracted into .cache/proxy) for the forward-auth
# end-to-end tests (cmd/gateway/proxy_test.go); without them those tests skip, saying why.
if proxy_exports=$(scripts/proxy-env.sh up); then
	eval "$proxy_exports"
	grep -E '^export HASHGATE_TEST_' <<<"$proxy_exports" | sed 's/^export /  /'
else
	echo "test.sh: WARNING: scripts/proxy-env.sh could not provision nginx and caddy; the proxy end-to-end tests will skip" >&2
fi
# Headless Chromium (Debian's chromium package) for the API reference test
# (cmd/gateway/docs_test.go); without it that test skips, saying why.
if browser_exports=$(scripts/browser-env.sh up); then
	eval "$browser_exports"
	grep -E '^export HASHGATE_TEST_' <<<"$browser_exports" | sed 's/^export /  /'
else
	echo "test.sh: WARNING: scripts/browser-env.sh could not install chromium; the /docs browser tests will skip" >&2
fi
# newman (npm, pinned in tools/newman) for the Postman collection test
# (cmd/gateway/postman_test.go); without it that test skips, saying why.
if newman_exports=$(scripts/newman-env.sh up); then
	eval "$newman_exports"
	grep -E '^export HASHGATE_TEST_' <<<"$newman_exports" | sed 's/^export /  /'
else
	echo "test.sh: WARNING: scripts/newman-env.sh could not install newman; the Postman collection test will skip" >&2
fi

# Room to build: the race-enabled test binaries and the build cache need a few GiB. A full
# disk fails every package at link time with "no space left on device" (a CI run did, on a
# machine whose build cache had grown to 67 GiB): say so first, and under CI empty Go's cache.
free_gib() { mkdir -p "$1" && df -Pk "$1" | awk 'NR == 2 { print int($4 / 1048576) }'; }
room_ok() { (($(free_gib "$(go env GOCACHE)") >= 4 && $(free_gib "${TMPDIR:-/tmp}") >= 4)); }
if ! room_ok; then
	echo "test.sh: WARNING: less than 4 GiB free for Go's build cache ($(go env GOCACHE)) or ${TMPDIR:-/tmp}" >&2
	if [[ ${CI:-} == true ]]; then
		echo "test.sh: CI=true: emptying Go's build and fuzz caches (go clean -cache -fuzzcache)" >&2
		go clean -cache -fuzzcache
		room_ok || { echo "test.sh: still less than 4 GiB free; free some disk space" >&2; exit 1; }
	fi
fi

args=("$@")
((${#args[@]})) || args=(./...)
# Tests append every token and MFA code they are handed to this file; the keyspace audit
# below proves none of them reached Redis.
export HASHGATE_SECRETS_FILE="$PWD/.cache/secrets.txt"
rm -f "$HASHGATE_SECRETS_FILE"
rc=0
# Show in the log that every backend answers (embedded, Redis 8, Redis 8 in HEXPIRE mode,
# cluster, Redis 7.0): the capability test names each one.
go test -count=1 -v -run '^TestOpenDetectsCapabilities$' ./internal/store/ | grep -E '^\s*--- (PASS|FAIL|SKIP)' || rc=$?
go test -race -count=1 "${args[@]}" || rc=$?
echo "test.sh: go test exit code $rc"

# Keyspace audit over everything the suite left: every key documented in docs/KEYS.md, with a
# TTL, within its bounds, and holding no secret produced during the run.
audit=0
go run ./cmd/keyaudit --keys docs/KEYS.md --secrets "$HASHGATE_SECRETS_FILE" \
	--redis "$HASHGATE_TEST_REDIS8" --redis "$HASHGATE_TEST_REDIS_CLUSTER" --redis "$HASHGATE_TEST_REDIS7" || audit=$?
echo "test.sh: keyspace audit exit code $audit"
((rc == 0)) && rc=$audit
exit "$rc"
