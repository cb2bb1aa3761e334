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
# This script only fetches the binaries; starting, reusing, forming the cluster and stopping
# are Go (internal/testredis/cmd/redisenv, with the cluster code the fault tests use).
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
BIN=$CACHE/bin

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
	sed -n '2,7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
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

# redisenv CMD: the Go side (start, reuse, cluster, stop), with the cache's absolute path. It
# runs with no descriptor of ours beyond stdio: the daemons it starts must not keep a lock or a
# caller's pipe open.
redisenv() {
	mkdir -p "$BIN"
	(cd "$REPO" && go build -o "$BIN/redisenv" ./internal/testredis/cmd/redisenv) || die "could not build internal/testredis/cmd/redisenv"
	HASHGATE_REDIS_CACHE=$(cd "$CACHE" && pwd) "$BIN/redisenv" "$1"
}

# provision fetches both servers once, under a lock shared with other runs.
provision() {
	mkdir -p "$CACHE"
	(
		flock -w 300 9 || die "another redis-env.sh has been provisioning for 5 minutes ($CACHE/.provision.lock)"
		provision_redis8
		provision_redis7
	) 9>"$CACHE/.provision.lock"
}

case ${1:-} in
up)
	provision
	redisenv up
	;;
down | env | status) redisenv "$1" ;;
*) usage ;;
esac
