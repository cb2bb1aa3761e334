#!/usr/bin/env bash
# Real reverse proxies for the forward-auth end-to-end tests (cmd/gateway/proxy_test.go).
#
#   scripts/proxy-env.sh up     provision (if needed) and print the export lines
#   scripts/proxy-env.sh env    print the export lines of what is provisioned
#
# nginx comes from Debian's nginx-light (on bookworm a transitional package whose nginx binary,
# with the auth_request module, is in the `nginx` package it depends on), Caddy 2.6 from
# Debian's caddy package (forward_auth is a Caddyfile directive). Both are downloaded with
# apt-get download and extracted into $REPO/.cache/proxy (override with
# HASHGATE_PROXY_CACHE): nothing is installed system-wide and no server is started here — the
# tests start their own, on loopback, with the configs they write. apt-get update runs only
# when the system's package lists do not know the packages.
#
# Traefik (not packaged by Debian) is built from the Go module proxy: $TRAEFIK_VERSION
# (HASHGATE_TRAEFIK_VERSION overrides it) or, when the proxy refuses it, the newest other
# $TRAEFIK_SERIES.x release the proxy lists, downloaded with `go mod download` and built from
# the module's own directory (its go.mod has replace directives, which apply only there), into
# the same cache. The first build takes minutes.
#
# Progress goes to stderr; stdout carries only the export lines:
#   export HASHGATE_TEST_NGINX=...   (a wrapper running the extracted nginx)
#   export HASHGATE_TEST_CADDY=...   (the extracted caddy)
#   export HASHGATE_TEST_TRAEFIK=... (the built traefik, when it could be built)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${HASHGATE_PROXY_CACHE:-$REPO/.cache/proxy}
ROOT=$CACHE/root
BIN=$CACHE/bin
NGINX=$BIN/nginx
CADDY=$BIN/caddy
TRAEFIK=$BIN/traefik
TRAEFIK_MODULE=github.com/traefik/traefik/v3
TRAEFIK_SERIES=v3.3
# v3.3.6 and v3.3.7 are refused by proxy.golang.org (403, and no checksum-database entry).
TRAEFIK_VERSION=${HASHGATE_TRAEFIK_VERSION:-v3.3.5}

log() { printf '[proxy-env] %s\n' "$*" >&2; }
die() {
	printf '[proxy-env] ERROR: %s\n' "$*" >&2
	exit 1
}

run_quiet() {
	local logf=$1
	shift
	if ! "$@" >"$logf" 2>&1; then
		tail -n 30 "$logf" | sed 's/^/    /' >&2
		return 1
	fi
}

nginx_ok() { [[ -x $NGINX ]] && timeout 10 "$NGINX" -V 2>&1 | grep -q -- '--with-http_auth_request_module'; }
caddy_ok() { [[ -x $CADDY ]] && timeout 10 "$CADDY" version 2>/dev/null | grep -Eq '^v?2\.'; }
traefik_ok() { [[ -x $TRAEFIK ]] && timeout 10 "$TRAEFIK" version 2>/dev/null | grep -q "Version: *$TRAEFIK_SERIES\."; }

# packages: nginx-light, the package holding its nginx binary (its nginx/nginx-core dependency
# on releases where nginx-light is transitional), caddy, and the shared libraries the binaries
# need that this system lacks.
packages() {
	local pkgs=(nginx-light caddy) dep p
	while read -r dep; do
		[[ $dep == nginx || $dep == nginx-core ]] && pkgs+=("$dep")
	done < <(apt-cache depends nginx-light 2>/dev/null | awk '$1 == "Depends:" { print $2 }' | sort -u)
	for p in libc6 libcrypt1 libpcre2-8-0 libssl3 zlib1g; do
		[[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true) == *"ok installed" ]] || pkgs+=("$p")
	done
	printf '%s\n' "${pkgs[@]}"
}

provision() {
	if nginx_ok && caddy_ok; then
		log "nginx and caddy: cached ($("$NGINX" -v 2>&1 | sed 's/.*: //'), caddy $("$CADDY" version | awk '{ print $1 }'))"
		return
	fi
	log "provisioning nginx-light and caddy from the system's Debian packages ..."
	local debs=$CACHE/debs logf=$CACHE/apt.log cand
	mkdir -p "$debs"
	cand=$(apt-cache policy nginx-light caddy 2>/dev/null | awk '/Candidate:/ { print $2 }' | grep -vc '(none)' || true)
	if [[ $cand != 2 ]]; then
		log "system package lists do not know nginx-light and caddy; running apt-get update"
		run_quiet "$logf" apt-get -q update || die "apt-get update failed; see $logf"
	fi
	local pkgs
	mapfile -t pkgs < <(packages)
	rm -f "$debs"/*.deb
	if ! (cd "$debs" && run_quiet "$logf" apt-get -q -o APT::Sandbox::User=root download "${pkgs[@]}"); then
		log "download failed; refreshing the system package lists"
		run_quiet "$logf" apt-get -q update || die "apt-get update failed; see $logf"
		mapfile -t pkgs < <(packages)
		(cd "$debs" && run_quiet "$logf" apt-get -q -o APT::Sandbox::User=root download "${pkgs[@]}") ||
			die "apt-get download ${pkgs[*]} failed; see $logf"
	fi
	rm -rf "$ROOT.tmp"
	mkdir -p "$ROOT.tmp"
	local d
	for d in "$debs"/*.deb; do
		dpkg-deb -x "$d" "$ROOT.tmp" || die "could not extract $d"
	done
	rm -rf "$ROOT"
	mv "$ROOT.tmp" "$ROOT"
	rm -f "$debs"/*.deb

	local ngx="" cand_bin
	for cand_bin in "$ROOT/usr/sbin/nginx" "$ROOT/usr/bin/nginx"; do
		[[ -x $cand_bin ]] && ngx=$cand_bin && break
	done
	[[ -n $ngx ]] || die "no nginx binary in the extracted packages (${pkgs[*]})"
	[[ -x $ROOT/usr/bin/caddy ]] || die "no caddy binary in the extracted caddy package"
	local libpath="$ROOT/usr/lib/x86_64-linux-gnu:$ROOT/lib/x86_64-linux-gnu" missing
	missing=$(LD_LIBRARY_PATH=$libpath ldd "$ngx" 2>&1 | grep 'not found' || true)
	[[ -z $missing ]] || die "nginx misses libraries: $missing"
	mkdir -p "$BIN"
	printf '#!/bin/sh\n# generated by scripts/proxy-env.sh; do not edit\nLD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %s "$@"\n' \
		"'$libpath'" "'$ngx'" >"$NGINX.tmp"
	printf '#!/bin/sh\n# generated by scripts/proxy-env.sh; do not edit\nexec %s "$@"\n' "'$ROOT/usr/bin/caddy'" >"$CADDY.tmp"
	chmod 755 "$NGINX.tmp" "$CADDY.tmp"
	mv "$NGINX.tmp" "$NGINX"
	mv "$CADDY.tmp" "$CADDY"
	nginx_ok || die "the provisioned nginx does not run or lacks the auth_request module; try: rm -rf $CACHE"
	caddy_ok || die "the provisioned caddy does not run; try: rm -rf $CACHE"
	log "provisioned $("$NGINX" -v 2>&1 | sed 's/.*: //') and caddy $("$CADDY" version | awk '{ print $1 }')"
}

# traefik_versions lists the releases to try: $TRAEFIK_VERSION, then the other $TRAEFIK_SERIES
# releases the module proxy lists, newest first.
traefik_versions() {
	echo "$TRAEFIK_VERSION"
	(cd "$CACHE" && go list -m -versions "$TRAEFIK_MODULE" 2>/dev/null | tr ' ' '\n' | grep "^$TRAEFIK_SERIES\." |
		grep -vxF "$TRAEFIK_VERSION" | sort -t. -k3,3nr || true)
}

# provision_traefik builds traefik from the newest release the module proxy serves whose
# checksum verifies (one the proxy or the checksum database refuses is skipped).
provision_traefik() {
	if traefik_ok; then
		log "traefik: cached ($("$TRAEFIK" version | awk '/^Version:/ { print $2 }'))"
		return
	fi
	command -v go >/dev/null || die "traefik: no go toolchain on PATH"
	local logf=$CACHE/traefik.log v dir="" json
	mkdir -p "$BIN"
	: >"$logf"
	for v in $(traefik_versions); do
		json=$(cd "$CACHE" && go mod download -json "$TRAEFIK_MODULE@$v" 2>>"$logf" || true)
		if [[ -z $json ]] || grep -q '"Error"' <<<"$json"; then
			continue
		fi
		dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' <<<"$json")
		[[ -d $dir ]] && break
		dir=""
	done
	[[ -n $dir ]] || die "traefik: the module proxy serves no $TRAEFIK_SERIES release; see $logf"
	log "building traefik $v from the module proxy (a few minutes) ..."
	(cd "$dir" && GOFLAGS=-mod=mod run_quiet "$logf" go build -trimpath \
		-ldflags "-X github.com/traefik/traefik/v3/pkg/version.Version=$v" -o "$TRAEFIK.tmp" ./cmd/traefik) ||
		die "traefik: go build failed; see $logf"
	mv "$TRAEFIK.tmp" "$TRAEFIK"
	traefik_ok || die "the built traefik does not run or is not $TRAEFIK_SERIES; try: rm -f $TRAEFIK"
	log "built traefik $v"
}

export_lines() {
	cat <<EOF
export HASHGATE_TEST_NGINX='$NGINX'
export HASHGATE_TEST_CADDY='$CADDY'
EOF
	if traefik_ok; then
		echo "export HASHGATE_TEST_TRAEFIK='$TRAEFIK'"
	fi
}

lock() {
	mkdir -p "$CACHE"
	exec 9>"$CACHE/.lock"
	flock -w 300 9 || die "another proxy-env.sh has held $CACHE/.lock for 5 minutes"
}

case ${1:-} in
up)
	lock
	provision
	# Without traefik the nginx and Caddy tests still run (the proxy tests fail under CI=true).
	(provision_traefik) || log "WARNING: no traefik; its proxy tests will not run"
	export_lines
	;;
env)
	nginx_ok && caddy_ok || die "not provisioned; run: scripts/proxy-env.sh up"
	export_lines
	;;
*)
	sed -n '2,5p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac
