#!/usr/bin/env bash
# hashgate benchmark (what `make bench` runs):
#
#   scripts/bench.sh [cmd/bench flags...]      e.g. scripts/bench.sh -d 5s -scenarios authz-session
#
# 1. installs wrk from the distribution's packages when it is not on PATH (needs root);
# 2. finds a Redis 8 server: $HASHGATE_REDIS8_SERVER, else the one scripts/redis-env.sh keeps
#    in .cache/redis/bin. When neither exists it provisions it through scripts/redis-env.sh:
#    `up` (download, start) then `down` (stop). That only happens when no binaries exist, so
#    no real-Redis environment of this checkout can be running at that moment;
# 3. runs `go run ./cmd/bench`, which starts its OWN private Redis 8 on a free loopback port,
#    builds and starts the gateway, drives wrk and prints the tables (see docs/PERFORMANCE.md).
#
# It never touches a running test environment (scripts/redis-env.sh up/down) otherwise.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${HASHGATE_REDIS_CACHE:-$REPO/.cache/redis}
GO=${GO:-go}

log() { printf '[bench.sh] %s\n' "$*" >&2; }
die() {
	printf '[bench.sh] ERROR: %s\n' "$*" >&2
	exit 1
}

install_wrk() {
	command -v wrk >/dev/null 2>&1 && return
	local sudo=()
	if ((EUID != 0)); then
		command -v sudo >/dev/null 2>&1 || die "wrk is missing and this is not root: install it (apt-get install wrk)"
		sudo=(sudo)
	fi
	command -v apt-get >/dev/null 2>&1 || die "wrk is missing and there is no apt-get: install wrk (https://github.com/wg/wrk)"
	log "installing wrk (apt-get install -y wrk)"
	if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q wrk >/dev/null; then
		log "refreshing the package lists (apt-get update)"
		"${sudo[@]}" apt-get update -q >/dev/null
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q wrk >/dev/null
	fi
	command -v wrk >/dev/null 2>&1 || die "wrk is still not on PATH after apt-get install"
}

redis8_server() {
	local bin=${HASHGATE_REDIS8_SERVER:-$CACHE/bin/redis8-server}
	if [[ -x $bin ]]; then
		echo "$bin"
		return
	fi
	[[ -n ${HASHGATE_REDIS8_SERVER:-} ]] && die "HASHGATE_REDIS8_SERVER=$HASHGATE_REDIS8_SERVER is not executable"
	[[ -e $CACHE/env.sh ]] && die "$CACHE/env.sh exists but $bin does not: a real-Redis environment seems half up; run scripts/redis-env.sh down first"
	log "no Redis 8 yet: provisioning it with scripts/redis-env.sh (up, then down)"
	"$REPO/scripts/redis-env.sh" up >/dev/null
	"$REPO/scripts/redis-env.sh" down
	[[ -x $bin ]] || die "scripts/redis-env.sh did not leave $bin"
	echo "$bin"
}

install_wrk
server=$(redis8_server)
cd "$REPO"
exec "$GO" run ./cmd/bench -redis-server "$server" "$@"
