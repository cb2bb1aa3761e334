#!/usr/bin/env bash
# Lints api/openapi.yaml with Spectral and the OWASP API security ruleset
# (tools/spectral/.spectral.yaml). Installs the pinned packages from the npm registry into
# tools/spectral/node_modules on first use. Fails on any error; warnings are printed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../tools/spectral"
if [[ ! -x node_modules/.bin/spectral ]]; then
	npm install --no-package-lock --no-audit --no-fund --loglevel=error
fi
node_modules/.bin/spectral lint ../../api/openapi.yaml --ruleset .spectral.yaml --fail-severity error -f text "$@"
