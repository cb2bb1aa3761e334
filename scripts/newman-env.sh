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
ENV_NAME=newman-env LOCK_MINUTES=5 USAGE_LINES=6
# shellcheck source=scripts/env-lib.sh
source "$REPO/scripts/env-lib.sh"

want_version() { sed -n 's/.*"newman": *"\([^"]*\)".*/\1/p' "$PKG"; }
newman_ok() { [[ -x $NEWMAN ]] && [[ $(timeout 30 "$NEWMAN" --version 2>/dev/null) == "$(want_version)" ]]; }
provisioned() { newman_ok; }

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
	(cd "$CACHE" && run_quiet "$logf" npm install --no-package-lock --no-audit --no-fund --loglevel=error) ||
		die "npm install failed; see $logf"
	newman_ok || die "the installed newman does not run"
	log "installed newman $("$NEWMAN" --version)"
}

export_lines() {
	printf "export HASHGATE_TEST_NEWMAN='%s'\n" "$NEWMAN"
}

env_main "$@"
