#!/usr/bin/env bash
# Runs its arguments (make test's go test) with TMPDIR on a tmpfs when
# /dev/shm is one with room to spare: the tests write gigabytes of scratch
# (clones, prepared environments, Redis data, test binaries), and on the
# virtual disks of CI machines each byte written costs several times the
# CPU it does in memory. Elsewhere TMPDIR is left as it is. The directory
# is removed afterwards.
set -euo pipefail

# A run's scratch peaks near 1.5 GiB; leave the machine the rest.
need_gib=4
shm=/dev/shm
if [ "$(stat -f -c %T "$shm" 2>/dev/null)" = tmpfs ] &&
	[ "$(df --output=avail -B1G "$shm" | tail -1 | tr -d ' ')" -ge "$need_gib" ]; then
	TMPDIR=$(mktemp -d "$shm/agentbot-test-XXXXXX")
	export TMPDIR
	trap 'rm -rf "$TMPDIR" || echo "test-scratch: could not remove $TMPDIR" >&2' EXIT
fi
"$@"
