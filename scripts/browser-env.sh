#!/usr/bin/env bash
# Headless Chromium for the end-to-end test of the API reference (GET /docs,
# cmd/gateway/docs_test.go).
#
#   scripts/browser-env.sh up     install (if needed) and print the export line
#   scripts/browser-env.sh env    print the export line of what is installed
#
# Chromium comes from Debian's `chromium` package, installed with apt-get (it needs some sixty
# shared libraries from the same archive, which unpacking beside the repo as
# scripts/proxy-env.sh does for nginx would have to chase by hand). apt-get update runs only
# when the system's package lists do not know the package. The test starts the browser itself,
# headless, with a fresh profile, on loopback only.
#
# Progress goes to stderr; stdout carries only the export line:
#   export HASHGATE_TEST_CHROMIUM=/usr/bin/chromium
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${HASHGATE_BROWSER_CACHE:-$REPO/.cache/browser}
ENV_NAME=browser-env LOCK_MINUTES=10 USAGE_LINES=6
# shellcheck source=scripts/env-lib.sh
source "$REPO/scripts/env-lib.sh"

chromium_bin() { command -v chromium || true; }
chromium_ok() {
	local bin v
	bin=$(chromium_bin)
	[[ -n $bin ]] && v=$(timeout 30 "$bin" --version 2>/dev/null) && grep -q '^Chromium ' <<<"$v"
}
provisioned() { chromium_ok; }

provision() {
	if chromium_ok; then
		log "chromium: installed ($("$(chromium_bin)" --version 2>/dev/null))"
		return
	fi
	[[ $(id -u) == 0 ]] || die "chromium is not installed and installing it needs root: apt-get install chromium"
	log "installing Debian's chromium package (about 100 MB, once per machine) ..."
	mkdir -p "$CACHE"
	local logf=$CACHE/apt.log cand
	cand=$(apt-cache policy chromium 2>/dev/null | awk '/Candidate:/ { print $2 }')
	if [[ -z $cand || $cand == "(none)" ]]; then
		log "system package lists do not know chromium; running apt-get update"
		run_quiet "$logf" apt-get -q update || die "apt-get update failed; see $logf"
	fi
	export DEBIAN_FRONTEND=noninteractive
	if ! run_quiet "$logf" apt-get -q install -y --no-install-recommends chromium; then
		log "install failed; refreshing the system package lists"
		run_quiet "$logf" apt-get -q update || die "apt-get update failed; see $logf"
		run_quiet "$logf" apt-get -q install -y --no-install-recommends chromium || die "apt-get install chromium failed; see $logf"
	fi
	chromium_ok || die "the installed chromium does not run"
	log "installed $("$(chromium_bin)" --version 2>/dev/null)"
}

export_lines() {
	printf "export HASHGATE_TEST_CHROMIUM='%s'\n" "$(chromium_bin)"
}

env_main "$@"
