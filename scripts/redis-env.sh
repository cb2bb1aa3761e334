#!/usr/bin/env bash
# Real-Redis test environment for hashgate.
#
#   scripts/redis-env.sh up     provision (if needed) and start everything, print export lines
#   scripts/redis-env.sh down   stop everything (shutdown nosave) and remove run data
#   scripts/redis-env.sh env    print the export lines of the running environment
#   scripts/redis-env.sh status show what is running
#
# Everything listens on 127.0.0.1:
#   Redis 8 standalone  HASHGATE_REDIS8_PORT          (default 6390, appendonly yes, everysec)
#   Redis 8 cluster     HASHGATE_REDIS_CLUSTER_PORTS  (default 7000,7001,7002; 3 masters, no
#                       replicas; cluster bus on port+10000)
#   Redis 7.0           HASHGATE_REDIS7_PORT          (default 6391)
#
# Binaries are not installed system-wide. Redis 8 comes from Debian trixie's packages,
# downloaded with a private apt configuration (the mirror is read from this machine's own
# apt sources) and run through trixie's own dynamic loader; Redis 7.0 comes from the
# system's (bookworm) packages, extracted into the cache. A redis-server on PATH is used
# instead when it already has the right version. Downloads, binaries, wrappers and run data
# live under $REPO/.cache/redis (override with HASHGATE_REDIS_CACHE).
#
# Progress goes to stderr; `up` and `env` print only the export lines on stdout, so
#   eval "$(scripts/redis-env.sh up)"
# works. The same lines are written to $REPO/.cache/redis/env.sh.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${HASHGATE_REDIS_CACHE:-$REPO/.cache/redis}
RUN=$CACHE/run
BIN=$CACHE/bin
HOST=127.0.0.1
PORT8=${HASHGATE_REDIS8_PORT:-6390}
PORT7=${HASHGATE_REDIS7_PORT:-6391}
read -r -a CPORTS <<<"$(tr ',' ' ' <<<"${HASHGATE_REDIS_CLUSTER_PORTS:-7000,7001,7002}")"
START_TIMEOUT=${HASHGATE_REDIS_START_TIMEOUT:-30}

R8_SERVER=$BIN/redis8-server
R8_CLI=$BIN/redis8-cli
R7_SERVER=$BIN/redis7-server
R7_CLI=$BIN/redis7-cli

TRIXIE_PKGS=(redis-server redis-tools libc6 libssl3t64 libstdc++6 libgcc-s1 libjemalloc2
	liblzf1 libatomic1 libsystemd0 libcap2 zlib1g libzstd1)

log() { printf '[redis-env] %s\n' "$*" >&2; }
die() {
	printf '[redis-env] ERROR: %s\n' "$*" >&2
	exit 1
}

usage() {
	sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

validate_ports() {
	local p
	for p in "$PORT8" "$PORT7" "${CPORTS[@]}"; do
		if ! [[ $p =~ ^[0-9]+$ ]] || ((p < 1 || p > 55535)); then
			die "invalid port '$p' (cluster bus ports are port+10000)"
		fi
	done
	((${#CPORTS[@]} >= 3)) || die "a cluster needs at least 3 masters (HASHGATE_REDIS_CLUSTER_PORTS=${CPORTS[*]})"
}

# ---------------------------------------------------------------------------
# provisioning
# ---------------------------------------------------------------------------

# server_version BINARY -> "8.0.2" (empty if it does not run)
server_version() {
	local out
	out=$(timeout 10 "$1" --version 2>/dev/null) || return 0
	sed -n 's/.* v=\([0-9][0-9.]*\).*/\1/p' <<<"$out"
}

is_v8() { [[ ${1:-} =~ ^([89]|[1-9][0-9])\. ]]; }
is_v70() { [[ ${1:-} =~ ^7\.0\. ]]; }

# The main Debian mirror, read from the system's own apt sources.
debian_mirror() {
	if [[ -n ${HASHGATE_DEBIAN_MIRROR:-} ]]; then
		echo "${HASHGATE_DEBIAN_MIRROR%/}"
		return
	fi
	local f uri=""
	shopt -s nullglob
	local sources=(/etc/apt/sources.list.d/*.sources)
	local lists=(/etc/apt/sources.list /etc/apt/sources.list.d/*.list)
	shopt -u nullglob
	for f in "${sources[@]}"; do
		# deb822: first enabled "deb" stanza having a main suite (no -updates/-security).
		uri=$(awk 'BEGIN { RS = ""; FS = "\n" }
			{
				types = ""; uris = ""; suites = ""; enabled = "yes"
				for (i = 1; i <= NF; i++) {
					line = $i
					if (line ~ /^[ \t]*#/) continue
					if (match(line, /^[A-Za-z-]+:/)) {
						key = tolower(substr(line, 1, RLENGTH - 1))
						val = substr(line, RLENGTH + 1)
						gsub(/^[ \t]+|[ \t]+$/, "", val)
						if (key == "types") types = val
						else if (key == "uris") uris = val
						else if (key == "suites") suites = val
						else if (key == "enabled") enabled = tolower(val)
					}
				}
				if (enabled == "no" || types !~ /(^|[ \t])deb([ \t]|$)/) next
				n = split(suites, s, /[ \t]+/); ok = 0
				for (j = 1; j <= n; j++) if (s[j] != "" && s[j] !~ /[-\/]/) ok = 1
				if (!ok) next
				n = split(uris, u, /[ \t]+/)
				for (j = 1; j <= n; j++) if (u[j] ~ /^(https?|file):/) { print u[j]; exit }
			}' "$f")
		[[ -n $uri ]] && break
	done
	if [[ -z $uri ]]; then
		for f in "${lists[@]}"; do
			[[ -r $f ]] || continue
			uri=$(sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$f" |
				awk '$1 == "deb" && $2 ~ /^(https?|file):/ && $3 !~ /[-\/]/ { print $2; exit }')
			[[ -n $uri ]] && break
		done
	fi
	[[ -n $uri ]] || die "could not find a Debian mirror in /etc/apt/sources.list{,.d} (set HASHGATE_DEBIAN_MIRROR)"
	echo "${uri%/}"
}

# run_quiet LOGFILE CMD... : run CMD with output in LOGFILE; show the log on failure.
run_quiet() {
	local logf=$1
	shift
	if ! "$@" >"$logf" 2>&1; then
		tail -n 30 "$logf" | sed 's/^/    /' >&2
		return 1
	fi
}

# extract_debs DEBDIR DEST : extract every .deb in DEBDIR into a fresh DEST.
extract_debs() {
	local debdir=$1 dest=$2 d
	rm -rf "$dest.tmp"
	mkdir -p "$dest.tmp"
	for d in "$debdir"/*.deb; do
		dpkg-deb -x "$d" "$dest.tmp" || die "could not extract $d"
	done
	rm -rf "$dest"
	mv "$dest.tmp" "$dest"
}

# write_wrapper PATH BODY
write_wrapper() {
	mkdir -p "$BIN"
	printf '#!/bin/sh\n# generated by scripts/redis-env.sh; do not edit\n%s\n' "$2" >"$1.tmp"
	chmod 755 "$1.tmp"
	mv "$1.tmp" "$1"
}

# Private apt configuration for Debian trixie (never touches the system's lists/caches).
trixie_apt() {
	local dir=$CACHE/apt-trixie mirror keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	[[ $(dpkg --print-architecture) == amd64 ]] || die "only amd64 is supported (trixie loader path)"
	[[ -r $keyring ]] || die "$keyring missing (package debian-archive-keyring)"
	mirror=$(debian_mirror)
	mkdir -p "$dir"/{sources.list.d,preferences.d,lists/partial,archives/partial}
	: >"$dir/status"
	: >"$dir/preferences"
	echo "deb [signed-by=$keyring] $mirror trixie main" >"$dir/sources.list.new"
	if ! cmp -s "$dir/sources.list.new" "$dir/sources.list" 2>/dev/null; then
		mv "$dir/sources.list.new" "$dir/sources.list"
		rm -rf "$dir/lists" && mkdir -p "$dir/lists/partial"
	else
		rm -f "$dir/sources.list.new"
	fi
	cat >"$dir/apt.conf" <<EOF
// generated by scripts/redis-env.sh: private apt configuration for Debian trixie
Dir::Etc::sourcelist "$dir/sources.list";
Dir::Etc::sourceparts "$dir/sources.list.d";
Dir::Etc::preferences "$dir/preferences";
Dir::Etc::preferencesparts "$dir/preferences.d";
Dir::State "$dir";
Dir::State::lists "$dir/lists/";
Dir::State::status "$dir/status";
Dir::Cache "$dir";
Dir::Cache::archives "$dir/archives/";
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
APT::Architectures { "amd64"; };
APT::Sandbox::User "root";
Acquire::Languages "none";
Acquire::IndexTargets::deb::DEP-11::DefaultEnabled "false";
Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled "false";
Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled "false";
Acquire::IndexTargets::deb::CNF::DefaultEnabled "false";
Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled "false";
EOF
	echo "$dir/apt.conf"
}

provision_redis8() {
	local v
	v=$(server_version "$R8_SERVER")
	if is_v8 "$v" && [[ -x $R8_CLI ]] && timeout 10 "$R8_CLI" --version >/dev/null 2>&1; then
		log "Redis 8: cached ($v)"
		return
	fi
	# A redis-server on PATH that is already 8.x will do. A 7.4 one would not: the "redis8"
	# backends test the HSETEX mode (Redis 8 only), and the suite also forces the HEXPIRE
	# mode on the same server, so one Redis 8 covers both newer modes.
	local sys
	if sys=$(command -v redis-server) && is_v8 "$(server_version "$sys")" && command -v redis-cli >/dev/null; then
		write_wrapper "$R8_SERVER" "exec '$sys' \"\$@\""
		write_wrapper "$R8_CLI" "exec '$(command -v redis-cli)' \"\$@\""
		log "Redis 8: using $sys ($(server_version "$R8_SERVER"))"
		return
	fi

	log "Redis 8: provisioning from Debian trixie packages ..."
	local conf debs=$CACHE/debs/trixie root=$CACHE/redis8 logf=$CACHE/apt-trixie.log
	conf=$(trixie_apt)
	mkdir -p "$debs"
	shopt -s nullglob
	local lists=("$CACHE"/apt-trixie/lists/*_Packages*)
	shopt -u nullglob
	if ((${#lists[@]} == 0)); then
		run_quiet "$logf" env APT_CONFIG="$conf" apt-get -q update ||
			die "apt-get update (private trixie lists) failed; see $logf"
	fi
	rm -f "$debs"/*.deb
	if ! (cd "$debs" && run_quiet "$logf" env APT_CONFIG="$conf" apt-get -q download "${TRIXIE_PKGS[@]}"); then
		log "download failed; refreshing the private trixie package lists"
		run_quiet "$logf" env APT_CONFIG="$conf" apt-get -q update ||
			die "apt-get update (private trixie lists) failed; see $logf"
		(cd "$debs" && run_quiet "$logf" env APT_CONFIG="$conf" apt-get -q download "${TRIXIE_PKGS[@]}") ||
			die "apt-get download of trixie packages failed; see $logf"
	fi
	extract_debs "$debs" "$root"
	rm -f "$debs"/*.deb

	# Locate trixie's own dynamic loader in the extracted tree.
	local loader="" cand
	for cand in "$root/usr/lib64/ld-linux-x86-64.so.2" "$root/lib64/ld-linux-x86-64.so.2" \
		"$root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" "$root/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"; do
		if [[ -e $cand ]]; then
			loader=$(readlink -f "$cand")
			break
		fi
	done
	[[ -n $loader && -x $loader ]] || die "no ld-linux-x86-64.so.2 in the extracted trixie packages ($root)"
	local libpath="$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu"
	local missing
	missing=$("$loader" --inhibit-cache --library-path "$libpath" --list "$root/usr/bin/redis-server" 2>&1 | grep 'not found' || true)
	[[ -z $missing ]] || die "trixie redis-server misses libraries: $missing"
	local tool
	for tool in server cli benchmark; do
		write_wrapper "$BIN/redis8-$tool" \
			"exec '$loader' --inhibit-cache --library-path '$libpath' '$root/usr/bin/redis-$tool' \"\$@\""
	done
	v=$(server_version "$R8_SERVER")
	is_v8 "$v" || die "provisioned Redis 8 does not run or has the wrong version ('$v'); try: rm -rf $CACHE"
	log "Redis 8: provisioned $v"
}

provision_redis7() {
	local v
	v=$(server_version "$R7_SERVER")
	if is_v70 "$v" && [[ -x $R7_CLI ]] && timeout 10 "$R7_CLI" --version >/dev/null 2>&1; then
		log "Redis 7.0: cached ($v)"
		return
	fi
	local sys
	if sys=$(command -v redis-server) && is_v70 "$(server_version "$sys")" && command -v redis-cli >/dev/null; then
		write_wrapper "$R7_SERVER" "exec '$sys' \"\$@\""
		write_wrapper "$R7_CLI" "exec '$(command -v redis-cli)' \"\$@\""
		log "Redis 7.0: using $sys ($(server_version "$R7_SERVER"))"
		return
	fi

	log "Redis 7.0: provisioning from the system's Debian packages ..."
	local debs=$CACHE/debs/system root=$CACHE/redis7 logf=$CACHE/apt-system.log p
	local pkgs=(redis-server redis-tools)
	for p in liblzf1 libjemalloc2 libatomic1 libssl3 libsystemd0; do
		[[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true) == *"ok installed" ]] || pkgs+=("$p")
	done
	local cand
	cand=$(apt-cache policy redis-server 2>/dev/null | awk '/Candidate:/ { print $2 }')
	if [[ -z $cand || $cand == "(none)" ]]; then
		log "system package lists are empty; running apt-get update"
		run_quiet "$logf" apt-get -q update || die "apt-get update failed; see $logf"
	fi
	mkdir -p "$debs"
	rm -f "$debs"/*.deb
	if ! (cd "$debs" && run_quiet "$logf" apt-get -q -o APT::Sandbox::User=root download "${pkgs[@]}"); then
		log "download failed; refreshing the system package lists"
		run_quiet "$logf" apt-get -q update || die "apt-get update failed; see $logf"
		(cd "$debs" && run_quiet "$logf" apt-get -q -o APT::Sandbox::User=root download "${pkgs[@]}") ||
			die "apt-get download ${pkgs[*]} failed; see $logf"
	fi
	extract_debs "$debs" "$root"
	rm -f "$debs"/*.deb
	local libpath="$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu"
	local missing
	missing=$(LD_LIBRARY_PATH=$libpath ldd "$root/usr/bin/redis-server" 2>&1 | grep 'not found' || true)
	[[ -z $missing ]] || die "Redis 7.0 redis-server misses libraries: $missing"
	local tool
	for tool in server cli benchmark; do
		write_wrapper "$BIN/redis7-$tool" \
			"LD_LIBRARY_PATH='$libpath'\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH} exec '$root/usr/bin/redis-$tool' \"\$@\""
	done
	v=$(server_version "$R7_SERVER")
	is_v70 "$v" || die "provisioned Redis 7.0 does not run or has the wrong version ('$v' from package $cand); try: rm -rf $CACHE"
	log "Redis 7.0: provisioned $v"
}

# ---------------------------------------------------------------------------
# instances
# ---------------------------------------------------------------------------

# rcli CLI PORT ARGS... (bounded in time)
rcli() {
	local cli=$1 port=$2
	shift 2
	timeout 10 "$cli" -h "$HOST" -p "$port" "$@"
}

ping_ok() { [[ $(rcli "$1" "$2" PING 2>/dev/null) == PONG ]]; }

# info_field CLI PORT SECTION FIELD
info_field() {
	rcli "$1" "$2" INFO "$3" 2>/dev/null | tr -d '\r' | sed -n "s/^$4://p"
}

# instance_conf NAME PORT KIND  (KIND: standalone8 | cluster | legacy7)
instance_conf() {
	local name=$1 port=$2 kind=$3 dir=$RUN/$1
	cat <<EOF
# generated by scripts/redis-env.sh ($kind)
bind $HOST
port $port
protected-mode yes
daemonize yes
pidfile $dir/redis.pid
logfile $dir/redis.log
loglevel notice
dir $dir
save ""
enable-debug-command local
EOF
	case $kind in
	standalone8)
		printf 'appendonly yes\nappendfsync everysec\n'
		;;
	cluster)
		printf 'appendonly no\ncluster-enabled yes\ncluster-config-file nodes.conf\ncluster-node-timeout 5000\n'
		;;
	legacy7)
		printf 'appendonly no\n'
		;;
	esac
}

# instance_state NAME PORT CLI KIND -> "down" | "reuse" | "stale" (ours, must restart)
# dies if the port is served by a Redis that is not ours.
instance_state() {
	local name=$1 port=$2 cli=$3 kind=$4 dir=$RUN/$1
	if ! ping_ok "$cli" "$port"; then
		if [[ -f $dir/redis.pid ]] && pid_alive "$(cat "$dir/redis.pid" 2>/dev/null)"; then
			echo stale
		else
			echo down
		fi
		return
	fi
	local cf
	cf=$(info_field "$cli" "$port" server config_file)
	if [[ $cf != "$dir/redis.conf" ]]; then
		die "port $port is already served by a Redis not managed here (config_file='$cf'); stop it or set another port"
	fi
	if [[ -f $dir/redis.conf ]] && cmp -s "$dir/redis.conf" <(instance_conf "$name" "$port" "$kind"); then
		echo reuse
	else
		echo stale
	fi
}

# pid_alive PID: running and not a zombie (a daemon's exit is reaped by init, sometimes late).
pid_alive() {
	local st
	kill -0 "$1" 2>/dev/null || return 1
	st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
	[[ -n $st && $st != Z && $st != X ]]
}

wait_pid_gone() {
	local pid=$1 deadline=$((SECONDS + $2))
	while pid_alive "$pid"; do
		((SECONDS < deadline)) || return 1
		sleep 0.1
	done
}

# stop_instance DIR : shutdown nosave, falling back to the pid file.
stop_instance() {
	local dir=$1 port="" pid="" cli=$R8_CLI
	[[ -f $dir/redis.conf ]] && port=$(awk '$1 == "port" { print $2 }' "$dir/redis.conf")
	[[ -f $dir/redis.pid ]] && pid=$(cat "$dir/redis.pid" 2>/dev/null || true)
	[[ -x $cli ]] || cli=$R7_CLI
	if [[ -n $port && -x $cli ]] && ping_ok "$cli" "$port"; then
		# Only shut it down if it is really ours.
		if [[ $(info_field "$cli" "$port" server config_file) == "$dir/redis.conf" ]]; then
			[[ -n $pid ]] || pid=$(info_field "$cli" "$port" server process_id)
			rcli "$cli" "$port" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
		fi
	fi
	if [[ $pid =~ ^[0-9]+$ ]] && pid_alive "$pid"; then
		if ! wait_pid_gone "$pid" 10; then
			# Still there: make sure the pid is a Redis of ours (its cwd is its dir) before killing.
			if [[ $(readlink "/proc/$pid/cwd" 2>/dev/null) == "$dir" ]]; then
				log "pid $pid did not shut down; sending TERM"
				kill -TERM "$pid" 2>/dev/null || true
				wait_pid_gone "$pid" 10 || {
					kill -KILL "$pid" 2>/dev/null || true
					wait_pid_gone "$pid" 5 || die "could not stop pid $pid ($dir)"
				}
			fi
		fi
	fi
	if [[ -n $port && -x $cli ]]; then
		local deadline=$((SECONDS + 10))
		while ping_ok "$cli" "$port"; do
			((SECONDS < deadline)) || die "port $port still answers after shutdown"
			sleep 0.1
		done
	fi
}

# start_instance NAME PORT SERVER CLI KIND : fresh data dir, start, wait for PING.
start_instance() {
	local name=$1 port=$2 server=$3 cli=$4 kind=$5 dir=$RUN/$1
	rm -rf "$dir"
	mkdir -p "$dir"
	instance_conf "$name" "$port" "$kind" >"$dir/redis.conf"
	# Start with no inherited descriptors beyond stdio: the daemon must not keep our lock
	# (fd 9) or a caller's pipes open.
	if ! (
		for fd in /proc/self/fd/*; do
			fd=${fd##*/}
			((fd > 2)) && { eval "exec $fd>&-" 2>/dev/null || true; }
		done
		exec "$server" "$dir/redis.conf"
	) </dev/null >"$dir/start.out" 2>&1; then
		cat "$dir/start.out" >&2
		[[ -f $dir/redis.log ]] && tail -n 20 "$dir/redis.log" >&2
		die "could not start $name on port $port"
	fi
	local deadline=$((SECONDS + START_TIMEOUT))
	until ping_ok "$cli" "$port"; do
		if ((SECONDS >= deadline)); then
			[[ -f $dir/redis.log ]] && tail -n 20 "$dir/redis.log" | sed 's/^/    /' >&2
			die "$name did not answer PING on port $port within ${START_TIMEOUT}s (log: $dir/redis.log)"
		fi
		sleep 0.1
	done
	[[ $(info_field "$cli" "$port" server config_file) == "$dir/redis.conf" ]] ||
		die "port $port answers, but not with the $name instance just started (port taken?)"
}

flush_instance() {
	local cli=$1 port=$2
	rcli "$cli" "$port" FLUSHALL SYNC >/dev/null
	rcli "$cli" "$port" SCRIPT FLUSH >/dev/null
	rcli "$cli" "$port" FUNCTION FLUSH >/dev/null
	rcli "$cli" "$port" CONFIG RESETSTAT >/dev/null
}

# up_single NAME PORT SERVER CLI KIND
up_single() {
	local name=$1 port=$2 server=$3 cli=$4 kind=$5 state
	state=$(instance_state "$name" "$port" "$cli" "$kind")
	case $state in
	reuse)
		flush_instance "$cli" "$port"
		log "$name: reusing running instance on $HOST:$port (flushed)"
		;;
	*)
		[[ $state == stale ]] && { log "$name: restarting"; stop_instance "$RUN/$name"; }
		start_instance "$name" "$port" "$server" "$cli" "$kind"
		log "$name: started on $HOST:$port"
		;;
	esac
}

cluster_healthy() {
	local port n=${#CPORTS[@]} info
	for port in "${CPORTS[@]}"; do
		info=$(rcli "$R8_CLI" "$port" CLUSTER INFO 2>/dev/null | tr -d '\r') || return 1
		grep -qx 'cluster_state:ok' <<<"$info" || return 1
		grep -qx "cluster_known_nodes:$n" <<<"$info" || return 1
		grep -qx 'cluster_slots_assigned:16384' <<<"$info" || return 1
		grep -qx "cluster_size:$n" <<<"$info" || return 1
	done
	# The nodes are exactly our ports.
	local want got
	want=$(printf '%s\n' "${CPORTS[@]}" | sort -n | tr '\n' ' ')
	got=$(rcli "$R8_CLI" "${CPORTS[0]}" CLUSTER NODES 2>/dev/null | tr -d '\r' |
		awk '{ split($2, a, "[:@]"); print a[2] }' | sort -n | tr '\n' ' ')
	[[ $want == "$got" ]]
}

up_cluster() {
	local port reuse=1 state
	for port in "${CPORTS[@]}"; do
		state=$(instance_state "cluster-$port" "$port" "$R8_CLI" cluster)
		[[ $state == reuse ]] || reuse=0
	done
	if ((reuse)) && cluster_healthy; then
		for port in "${CPORTS[@]}"; do
			flush_instance "$R8_CLI" "$port"
		done
		log "cluster: reusing running cluster on ports ${CPORTS[*]} (flushed)"
		return
	fi
	for port in "${CPORTS[@]}"; do
		stop_instance "$RUN/cluster-$port"
	done
	for port in "${CPORTS[@]}"; do
		start_instance "cluster-$port" "$port" "$R8_SERVER" "$R8_CLI" cluster
	done
	local addrs=()
	for port in "${CPORTS[@]}"; do addrs+=("$HOST:$port"); done
	run_quiet "$RUN/cluster-create.log" timeout 60 "$R8_CLI" --cluster create "${addrs[@]}" \
		--cluster-replicas 0 --cluster-yes || die "redis-cli --cluster create failed (log: $RUN/cluster-create.log)"
	local deadline=$((SECONDS + START_TIMEOUT))
	until cluster_healthy; do
		((SECONDS < deadline)) || die "cluster did not reach cluster_state:ok on all nodes within ${START_TIMEOUT}s"
		sleep 0.2
	done
	log "cluster: created on ports ${CPORTS[*]} (cluster_state:ok on all nodes)"
}

export_lines() {
	local addrs=() port
	for port in "${CPORTS[@]}"; do addrs+=("$HOST:$port"); done
	local IFS=,
	cat <<EOF
export HASHGATE_TEST_REDIS8='redis://$HOST:$PORT8'
export HASHGATE_TEST_REDIS_CLUSTER='${addrs[*]}'
export HASHGATE_TEST_REDIS7='redis://$HOST:$PORT7'
export HASHGATE_REDIS8_SERVER='$R8_SERVER'
export HASHGATE_REDIS8_CLI='$R8_CLI'
export HASHGATE_REDIS7_SERVER='$R7_SERVER'
export HASHGATE_REDIS7_CLI='$R7_CLI'
EOF
}

check_versions() {
	local v port
	v=$(info_field "$R8_CLI" "$PORT8" server redis_version)
	is_v8 "$v" || die "Redis on port $PORT8 is version '$v', want 8.x"
	log "version: redis8 standalone $HOST:$PORT8 = $v"
	for port in "${CPORTS[@]}"; do
		v=$(info_field "$R8_CLI" "$port" server redis_version)
		is_v8 "$v" || die "Redis on port $port is version '$v', want 8.x"
	done
	log "version: redis8 cluster ${CPORTS[*]} = $v"
	v=$(info_field "$R7_CLI" "$PORT7" server redis_version)
	is_v70 "$v" || die "Redis on port $PORT7 is version '$v', want 7.0.x"
	log "version: redis7 legacy $HOST:$PORT7 = $v"
}

lock() {
	mkdir -p "$CACHE"
	exec 9>"$CACHE/.lock"
	flock -w 300 9 || die "another redis-env.sh has held $CACHE/.lock for 5 minutes"
}

cmd_up() {
	validate_ports
	lock
	local t0=$SECONDS
	provision_redis8
	provision_redis7
	mkdir -p "$RUN"
	# Fail before touching anything if a port is served by a Redis that is not ours.
	local port
	for port in "$PORT8" "${CPORTS[@]}" "$PORT7"; do
		ping_ok "$R8_CLI" "$port" || continue
		[[ $(info_field "$R8_CLI" "$port" server config_file) == "$RUN"/*/redis.conf ]] ||
			die "port $port is already served by a Redis not managed here; stop it or choose other ports (HASHGATE_REDIS8_PORT, HASHGATE_REDIS7_PORT, HASHGATE_REDIS_CLUSTER_PORTS)"
	done
	up_single standalone8 "$PORT8" "$R8_SERVER" "$R8_CLI" standalone8
	up_cluster
	up_single legacy7 "$PORT7" "$R7_SERVER" "$R7_CLI" legacy7
	check_versions
	export_lines >"$CACHE/env.sh.tmp"
	mv "$CACHE/env.sh.tmp" "$CACHE/env.sh"
	log "ready in $((SECONDS - t0))s; exports written to $CACHE/env.sh"
	export_lines
}

cmd_down() {
	mkdir -p "$CACHE"
	lock
	local d
	shopt -s nullglob
	for d in "$RUN"/*/; do
		d=${d%/}
		[[ -f $d/redis.conf ]] || continue
		stop_instance "$d"
		log "stopped $(basename "$d")"
	done
	shopt -u nullglob
	rm -rf "$RUN" "$CACHE/env.sh"
	log "down"
}

cmd_env() {
	validate_ports
	[[ -f $CACHE/env.sh ]] || die "environment is not up (no $CACHE/env.sh); run: scripts/redis-env.sh up"
	local port
	for port in "$PORT8" "${CPORTS[@]}"; do
		ping_ok "$R8_CLI" "$port" || die "Redis 8 on port $port is not running; run: scripts/redis-env.sh up"
	done
	ping_ok "$R7_CLI" "$PORT7" || die "Redis 7.0 on port $PORT7 is not running; run: scripts/redis-env.sh up"
	cat "$CACHE/env.sh"
}

cmd_status() {
	validate_ports
	local port cli
	for port in "$PORT8" "${CPORTS[@]}" "$PORT7"; do
		cli=$R8_CLI
		[[ $port == "$PORT7" ]] && cli=$R7_CLI
		if [[ -x $cli ]] && ping_ok "$cli" "$port"; then
			echo "$HOST:$port up   redis $(info_field "$cli" "$port" server redis_version)  $(info_field "$cli" "$port" server config_file)"
		else
			echo "$HOST:$port down"
		fi
	done
}

case ${1:-} in
up) cmd_up ;;
down) cmd_down ;;
env) cmd_env ;;
status) cmd_status ;;
-h | --help | help) usage ;;
*) usage ;;
esac
