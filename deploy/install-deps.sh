#!/usr/bin/env bash
# Installs the Debian packages agentbot's demo uses, when missing: redis-server
# (the queue), git, debootstrap (the offline sandbox image) and ripgrep; with
# --test also chromium, in which the admin pages are rendered by a test,
# and curl, the model endpoint's client in agentbot-demo's test.
# Idempotent: a machine that has them is left alone.
set -euo pipefail

need=()
command -v redis-server >/dev/null || need+=(redis-server)
command -v git >/dev/null || need+=(git)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v rg >/dev/null || need+=(ripgrep)
if [ "${1:-}" = --test ]; then
	command -v chromium >/dev/null || need+=(chromium)
	command -v curl >/dev/null || need+=(curl)
fi
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
