#!/usr/bin/env bash
# newman, Postman's command-line runner, for the test that runs the Postman collection
# (docs/postman) against a live gateway (cmd/gateway/postman_test.go).
#
#   scripts/newman-env.sh up     install (if needed) and print the export line
#   scripts/newman-env.sh env    print the export line of what is installed
#
# The pinned version (tools/newman/package.json) is installed with npm from the npm registry
# into $REPO/.cache/newman (override with HASHGATE_NEWMAN_CACHE), like scripts/lint-spec.sh
# installs Spectral: nothing is installed system-wide.
#
# Progress goes to stderr; stdout carries only the export line:
#   export HASHGATE_TEST_NEWMAN=.../node_modules/.bin/newman
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${HASHGATE_NEWMAN_CACHE:-$REPO/.cache/newman}
NEWMAN=$CACHE/node_modules/.bin/newman
PKG=$REPO/tools/newman/package.json

log() { printf '[newman-env] %s\n' "$*" >&2; }
die() {
	printf '[newman-env] ERROR: %s\n' "$*" >&2
	exit 1
}

want_version() { sed -n 's/.*"newman": *"\([^"]*\)".*/\1/p' "$PKG"; }
newman_ok() { [[ -x $NEWMAN ]] && [[ $(timeout 30 "$NEWMAN" --version 2>/dev/null) == "$(want_version)" ]]; }

provision() {
	if newman_ok; then
		log "newman $("$NEWMAN" --version): cached"
		return
	fi
	command -v npm >/dev/null || die "npm is not on PATH (Node.js is needed to run newman)"
	log "installing newman $(want_version) from the npm registry into $CACHE ..."
	mkdir -p "$CACHE"
	cp "$PKG" "$CACHE/package.json"
	local logf=$CACHE/npm.log
	if ! (cd "$CACHE" && npm install --no-package-lock --no-audit --no-fund --loglevel=error >"$logf" 2>&1); then
		tail -n 30 "$logf" | sed 's/^/    /' >&2
		die "npm install failed; see $logf"
	fi
	newman_ok || die "the installed newman does not run"
	log "installed newman $("$NEWMAN" --version)"
}

lock() {
	mkdir -p "$CACHE"
	exec 9>"$CACHE/.lock"
	flock -w 300 9 || die "another newman-env.sh has held $CACHE/.lock for 5 minutes"
}

case ${1:-} in
up)
	lock
	provision
	printf "export HASHGATE_TEST_NEWMAN='%s'\n" "$NEWMAN"
	;;
env)
	newman_ok || die "not installed; run: scripts/newman-env.sh up"
	printf "export HASHGATE_TEST_NEWMAN='%s'\n" "$NEWMAN"
	;;
*)
	sed -n '2,6p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac
