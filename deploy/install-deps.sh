#!/usr/bin/env bash
# Installs the Debian packages agentbot's tests and demo use, when missing:
# redis-server (the queue), git, debootstrap (the offline sandbox image) and
# ripgrep. Idempotent: a machine that has them is left alone.
set -euo pipefail

need=()
command -v redis-server >/dev/null || need+=(redis-server)
command -v git >/dev/null || need+=(git)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v rg >/dev/null || need+=(ripgrep)
[ ${#need[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	sudo=sudo
else
	sudo=
fi
echo "installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${need[@]}" >/dev/null
