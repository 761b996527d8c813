#!/usr/bin/env bash
# Builds the sandbox image with no registry: debootstrap a minimal Debian
# bookworm into a temporary folder, "docker import" it as the base layer, then
# add the host's Go toolchain in a second layer with a "docker build" whose
# FROM is that local image, so nothing is ever pulled.
#
#   deploy/sandbox/build-offline.sh [TAG]      (default agentbot-sandbox:dev)
#
# Idempotent and cached by tag: when TAG exists the script exits at once; the
# debootstrap base is cached under its own tag, so a new Go toolchain only
# rebuilds the second layer. Needs root (debootstrap), docker and debootstrap.
#
# Environment:
#   MIRROR      Debian mirror for debootstrap (default: the first Debian URI of
#               apt's own sources, which is the one this machine can reach)
#   GOROOT_SRC  the Go toolchain to copy (default /usr/local/go)
#   REBUILD=1   rebuild even when TAG exists
set -euo pipefail

tag=${1:-agentbot-sandbox:dev}
base_tag=agentbot-sandbox-base:bookworm
goroot=${GOROOT_SRC:-/usr/local/go}
uid=65532 # the sandbox user; also hard-coded in runner/sandbox (DefaultUser)

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
step "adding this machine's Go toolchain ($goroot) as $tag"

# Second layer: the host's Go toolchain, from the local base (nothing pulled).
# The build context is streamed: the Dockerfile plus the toolchain, no copy on disk.
printf 'FROM %s\nCOPY go /usr/local/go\n' "$base_tag" >"$work/Dockerfile"
# GOROOT/test is Go's own test suite, which nothing in the sandbox runs.
tar -c -C "$work" Dockerfile -C "$(dirname "$goroot")" --exclude="$(basename "$goroot")/test" --transform "s,^$(basename "$goroot"),go," "$(basename "$goroot")" |
	DOCKER_BUILDKIT=0 docker build -q -t "$tag" - >"$work/build.log" 2>&1 ||
	{ cat "$work/build.log" >&2; exit 1; }
step "built $tag"
