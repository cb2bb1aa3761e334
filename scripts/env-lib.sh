# shellcheck shell=bash
# What the scripts/*-env.sh provisioners share (sourced, not run): log lines tagged with the
# script's name, a quiet command runner, fetching and unpacking Debian packages, the lock held
# while provisioning and the `up`/`env` verbs. The sourcing script sets ENV_NAME (its name
# without .sh: "proxy-env") and CACHE first.

log() { printf '[%s] %s\n' "$ENV_NAME" "$*" >&2; }
die() {
	printf '[%s] ERROR: %s\n' "$ENV_NAME" "$*" >&2
	exit 1
}

# usage LAST: the script's header from line 2 to LAST (what it is, its verbs), then exit 2.
usage() {
	sed -n "2,${1}p" "${BASH_SOURCE[-1]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

# run_quiet LOGFILE CMD... : run CMD with its output in LOGFILE; show the log's tail on failure.
run_quiet() {
	local logf=$1
	shift
	if ! "$@" >"$logf" 2>&1; then
		tail -n 30 "$logf" | sed 's/^/    /' >&2
		return 1
	fi
}

# fetch_debs DEBDIR LOGFILE LISTS PKGS APT... : download the packages the function PKGS prints
# (one a line) into an emptied DEBDIR with APT..., the apt-get command with its environment and
# options; when that fails, refresh the package lists (LISTS says which: "system", "private
# trixie") and try once more.
fetch_debs() {
	local debs=$1 logf=$2 lists=$3 pkgs=$4 list
	shift 4
	mkdir -p "$debs"
	rm -f "$debs"/*.deb
	mapfile -t list < <("$pkgs")
	if ! (cd "$debs" && run_quiet "$logf" "$@" download "${list[@]}"); then
		log "download failed; refreshing the $lists package lists"
		run_quiet "$logf" "$@" update || die "apt-get update ($lists package lists) failed; see $logf"
		mapfile -t list < <("$pkgs")
		(cd "$debs" && run_quiet "$logf" "$@" download "${list[@]}") ||
			die "apt-get download ${list[*]} failed; see $logf"
	fi
}

# extract_debs DEBDIR DEST : unpack every .deb in DEBDIR into a fresh DEST, then delete them.
extract_debs() {
	local debdir=$1 dest=$2 d
	rm -rf "$dest.tmp"
	mkdir -p "$dest.tmp"
	for d in "$debdir"/*.deb; do
		dpkg-deb -x "$d" "$dest.tmp" || die "could not extract $d"
	done
	rm -rf "$dest"
	mv "$dest.tmp" "$dest"
	rm -f "$debdir"/*.deb
}

# lock MINUTES: hold $CACHE/.lock while provisioning, waiting at most MINUTES for another run.
lock() {
	mkdir -p "$CACHE"
	exec 9>"$CACHE/.lock"
	flock -w $(($1 * 60)) 9 || die "another $ENV_NAME.sh has held $CACHE/.lock for $1 minutes"
}

# env_main VERB: `up` provisions (under the lock, waiting LOCK_MINUTES) and prints the export
# lines; `env` prints those of what is provisioned, and says to run `up` when provisioned
# fails; anything else shows the header's first USAGE_LINES lines. The sourcing script defines
# provision, provisioned and export_lines.
env_main() {
	case ${1:-} in
	up)
		lock "$LOCK_MINUTES"
		provision
		export_lines
		;;
	env)
		provisioned || die "not provisioned; run: scripts/$ENV_NAME.sh up"
		export_lines
		;;
	*) usage "$USAGE_LINES" ;;
	esac
}
