#!/usr/bin/env bash
# Smoke test of scripts/redis-env.sh against the real servers: up, versions, HSETEX on
# Redis 8 (standalone and cluster) but not on 7.0, idempotent second up (same processes,
# data flushed), env, down (nothing left listening). Leaves the environment down.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ENV=scripts/redis-env.sh
pass=0 fail=0
check() {
	local what=$1
	shift
	if "$@" >/dev/null 2>&1; then
		pass=$((pass + 1)); echo "ok   $what"
	else
		fail=$((fail + 1)); echo "FAIL $what"
	fi
}
trap '$ENV down >/dev/null 2>&1 || true' EXIT

eval "$($ENV up)"
c8=$HASHGATE_REDIS8_CLI c7=$HASHGATE_REDIS7_CLI
p8=${HASHGATE_TEST_REDIS8##*:} p7=${HASHGATE_TEST_REDIS7##*:}
IFS=, read -r -a nodes <<<"$HASHGATE_TEST_REDIS_CLUSTER"
c0=${nodes[0]##*:}

check "redis8 is 8.x" bash -c "'$c8' -p $p8 INFO server | grep -q '^redis_version:8\.'"
check "redis7 is 7.0.x" bash -c "'$c7' -p $p7 INFO server | grep -q '^redis_version:7\.0\.'"
check "redis8 appendonly yes" bash -c "'$c8' -p $p8 CONFIG GET appendonly | grep -qx yes"
for n in "${nodes[@]}"; do
	check "cluster_state:ok on $n" bash -c "'$c8' -p ${n##*:} CLUSTER INFO | grep -q '^cluster_state:ok'"
done
check "HSETEX on redis8" bash -c "[ \"\$('$c8' -p $p8 HSETEX k EX 10 FIELDS 1 f v)\" = 1 ]"
check "HSETEX on cluster" bash -c "[ \"\$('$c8' -c -p $c0 HSETEX k EX 10 FIELDS 1 f v)\" = 1 ]"
check "HSETEX fails on redis7" bash -c "'$c7' -p $p7 HSETEX k EX 10 FIELDS 1 f v | grep -q 'unknown command'"

pid8=$("$c8" -p "$p8" INFO server | tr -d '\r' | sed -n 's/^process_id://p')
"$c7" -p "$p7" SET k v >/dev/null
eval "$($ENV up)"
check "second up reuses redis8" bash -c "'$c8' -p $p8 INFO server | grep -q '^process_id:$pid8'"
check "second up flushed redis8" bash -c "[ \"\$('$c8' -p $p8 DBSIZE)\" = 0 ]"
check "second up flushed cluster" bash -c "[ \"\$('$c8' -p $c0 DBSIZE)\" = 0 ]"
check "second up flushed redis7" bash -c "[ \"\$('$c7' -p $p7 DBSIZE)\" = 0 ]"
check "env prints exports" bash -c "$ENV env | grep -q HASHGATE_TEST_REDIS8"

$ENV down
alive=0
for p in "$p8" "$p7" "${nodes[@]##*:}"; do
	"$c8" -p "$p" PING >/dev/null 2>&1 && alive=1
done
check "down leaves nothing listening" test "$alive" = 0
check "env fails when down" bash -c "! $ENV env"

echo "$pass passed, $fail failed"
((fail == 0))
