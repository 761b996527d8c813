#!/usr/bin/env bash
# Builds the sandbox images with no container registry: debootstrap a minimal
# Debian bookworm into a temporary folder, "docker import" it as the base
# layer, then add one toolchain in a second layer with a "docker build" whose
# FROM is that local image, so nothing is ever pulled.
#
#   deploy/sandbox/build-offline.sh [go|python|node|all] [TAG]
#   deploy/sandbox/build-offline.sh TAG            (the go image, as TAG)
#
#   go      the host's Go toolchain, and a Go build cache of the standard
#           library the sandbox copies into each prepared environment
#           (default tag agentbot-sandbox:dev)
#   python  python3, venv, pip and pytest from Debian (agentbot-sandbox:python)
#   node    nodejs and npm from Debian (agentbot-sandbox:node)
#   all     the three, under their default tags
#
# Idempotent and cached by tag: when TAG exists the script exits at once; the
# debootstrap base is cached under its own tag, so a new toolchain only
# rebuilds the second layer. The python and node layers install Debian's
# packages from the same mirror as the base (a minute or two). Needs root
# (debootstrap), docker and debootstrap.
#
# Environment:
#   MIRROR      Debian mirror for debootstrap (default: the first Debian URI of
#               apt's own sources, which is the one this machine can reach)
#   GOROOT_SRC  the Go toolchain to copy (default /usr/local/go)
#   REBUILD=1   rebuild even when TAG exists
set -euo pipefail

flavour=go
case "${1:-}" in
go | python | node | all)
	flavour=$1
	shift
	;;
esac
if [ "$flavour" = all ]; then
	[ $# -eq 0 ] || { echo "build-offline.sh all takes no tag" >&2; exit 2; }
	for f in go python node; do "$0" "$f"; done
	exit 0
fi
case "$flavour" in
go) default_tag=agentbot-sandbox:dev ;;
*) default_tag=agentbot-sandbox:$flavour ;;
esac
tag=${1:-$default_tag}
base_tag=agentbot-sandbox-base:bookworm
goroot=${GOROOT_SRC:-/usr/local/go}
uid=65532 # the sandbox user; also hard-coded in runner/sandbox (DefaultUser)
# The image's seed of $HOME, copied into every prepared environment
# (runner/envcache.SeedHome).
seed=/usr/local/share/agentbot/home

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

if [ "${REBUILD:-}" != 1 ] && have_image "$tag"; then
	exit 0
fi

# Concurrent "make test" runs share one build instead of racing.
exec 9>/tmp/agentbot-sandbox-build.lock
flock 9
if [ "${REBUILD:-}" != 1 ] && have_image "$tag"; then
	exit 0
fi

# apt's configured Debian mirror, from either the deb822 or the one-line format.
apt_mirror() {
	local f
	for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -r "$f" ] || continue
		grep -hoE '(URIs:[[:space:]]*|^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?)https?://[^[:space:]]+/debian/?([[:space:]]|$)' "$f" |
			grep -oE 'https?://[^[:space:]]+' | head -n1
	done | head -n1
}

# step prints what the build is doing after the seconds since it began: a
# cold build takes minutes, and make demo shows where they go.
step() { printf '[%5ds] %s\n' "$SECONDS" "$*" >&2; }

# watch waits for the background job PID, printing the newest line of LOG
# that matches PATTERN every 15 s, and returns the job's status.
watch() {
	local pid=$1 log=$2 pattern=$3 next=$((SECONDS + 15))
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		if [ "$SECONDS" -ge "$next" ] && kill -0 "$pid" 2>/dev/null; then
			step "  $(grep -E "$pattern" "$log" | tail -n1 || true)"
			next=$((SECONDS + 15))
		fi
	done
	wait "$pid"
}

work=$(mktemp -d /tmp/agentbot-sandbox.XXXXXX)
trap 'rm -rf "$work"' EXIT

if [ "${REBUILD:-}" = 1 ] || ! have_image "$base_tag"; then
	mirror=${MIRROR:-$(apt_mirror)}
	mirror=${mirror:-http://deb.debian.org/debian}
	step "debootstrap bookworm from $mirror (a few minutes on a cold cache)"
	root=$work/rootfs
	# Downloaded packages are kept, so a rebuild on the same machine does not
	# fetch them again.
	mkdir -p /var/cache/agentbot-debootstrap
	# dpkg in the chroot skips its fsync per file: the folder is thrown away
	# if the build fails, and the fsyncs cost minutes on a busy disk.
	mkdir -p "$root/etc/dpkg/dpkg.cfg.d"
	echo force-unsafe-io >"$root/etc/dpkg/dpkg.cfg.d/agentbot-build"
	debootstrap --variant=minbase --components=main --cache-dir=/var/cache/agentbot-debootstrap \
		--include=git,ca-certificates,gcc,make,libc6-dev,ripgrep,procps \
		bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 &
	watch $! "$work/debootstrap.log" '^I: ' ||
		{ tail -n 30 "$work/debootstrap.log" >&2; exit 1; }
	step "importing the root filesystem as $base_tag"
	# Smaller image; nothing in the sandbox runs apt.
	rm -rf "$root/etc/dpkg/dpkg.cfg.d/agentbot-build" "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* \
		"$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/*
	# A named user so tools that look up the uid (git, ssh, id) work; mount points
	# for the work tree, the executor and the tmpfs home.
	echo "sandbox:x:$uid:$uid:sandbox:/home/sandbox:/bin/sh" >>"$root/etc/passwd"
	echo "sandbox:x:$uid:" >>"$root/etc/group"
	mkdir -p "$root/workspace" "$root/home/sandbox"
	touch "$root/agentbot"
	# The whole configuration is set here: every instruction of a "docker
	# build" costs a layer commit, which is slow on fuse-overlayfs. Go state
	# lives under the tmpfs $HOME, and the sandbox has no network, so the
	# module proxy is off.
	tar -C "$root" -c . | docker import \
		--change "ENV PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
		--change "ENV HOME=/home/sandbox" \
		--change "ENV GOTOOLCHAIN=local" \
		--change "ENV GOPROXY=off" \
		--change "ENV GOTELEMETRY=off" \
		--change "ENV GOPATH=/home/sandbox/go" \
		--change "ENV GOCACHE=/home/sandbox/.cache/go-build" \
		--change "USER $uid:$uid" \
		--change "WORKDIR /workspace" \
		--change 'CMD ["/bin/sh"]' \
		- "$base_tag" >/dev/null
	step "base $base_tag ready"
fi
case "$flavour" in
go) step "adding this machine's Go toolchain ($goroot) and its standard library's build cache as $tag" ;;
*) step "adding Debian's $flavour packages as $tag" ;;
esac

# Second layer: the toolchain, from the local base (nothing pulled). Each
# flavour is one RUN at most: every instruction costs a layer commit, slow on
# fuse-overlayfs.
apt_install() {
	printf 'RUN echo force-unsafe-io >/etc/dpkg/dpkg.cfg.d/agentbot-build \\\n'
	printf ' && apt-get update -qq && apt-get install -y -qq --no-install-recommends %s >/dev/null \\\n' "$*"
	printf ' && rm -rf /etc/dpkg/dpkg.cfg.d/agentbot-build /var/cache/apt/* /var/lib/apt/lists/* /usr/share/doc/* /usr/share/man/*\n'
}
case "$flavour" in
go)
	# The standard library's build cache and vet facts (seed-go-cache.sh).
	cp "$(dirname "$0")/seed-go-cache.sh" "$work/"
	{
		printf 'FROM %s\nCOPY go /usr/local/go\nCOPY seed-go-cache.sh /tmp/\nUSER 0\n' "$base_tag"
		printf 'RUN sh /tmp/seed-go-cache.sh %s && rm /tmp/seed-go-cache.sh\n' "$seed"
		printf 'USER %s:%s\n' "$uid" "$uid"
	} >"$work/Dockerfile"
	# The build context is streamed: the Dockerfile, the seeding script and
	# the toolchain, no copy on disk. GOROOT/test is Go's own test suite,
	# which nothing in the sandbox runs.
	tar -c -C "$work" Dockerfile seed-go-cache.sh -C "$(dirname "$goroot")" --exclude="$(basename "$goroot")/test" --transform "s,^$(basename "$goroot"),go," "$(basename "$goroot")" |
		DOCKER_BUILDKIT=0 docker build -q -t "$tag" - >"$work/build.log" 2>&1 ||
		{ cat "$work/build.log" >&2; exit 1; }
	;;
python | node)
	{
		printf 'FROM %s\nUSER 0\n' "$base_tag"
		if [ "$flavour" = python ]; then
			apt_install python3 python3-venv python3-pip python3-pytest
			# Debian marks its Python as externally managed; the root
			# filesystem is read-only anyway, so "pip install" goes to the
			# user's site under $HOME, part of the prepared environment.
			printf 'ENV PIP_BREAK_SYSTEM_PACKAGES=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PATH=/home/sandbox/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n'
		else
			apt_install nodejs npm
			printf 'ENV NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_FUND=false NPM_CONFIG_AUDIT=false\n'
		fi
		printf 'USER %s:%s\n' "$uid" "$uid"
	} >"$work/Dockerfile"
	tar -c -C "$work" Dockerfile | DOCKER_BUILDKIT=0 docker build -q -t "$tag" - >"$work/build.log" 2>&1 ||
		{ cat "$work/build.log" >&2; exit 1; }
	;;
esac
step "built $tag ($flavour)"
