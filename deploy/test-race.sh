#!/usr/bin/env bash
# Runs go test over every package of the module: the packages named as
# arguments (those whose code runs goroutines of its own) under the race
# detector instead of plainly, not both, since CI's time is bounded, and
# the others plainly (without cgo, as "make build" builds), both runs at
# once.
#
# usage: test-race.sh GO "GO TEST FLAGS" PACKAGE...
set -euo pipefail
go=$1
read -r -a flags <<<"$2"
shift 2
mapfile -t race < <("$go" list "$@")
mapfile -t plain < <("$go" list ./... | grep -vxF -f <(printf '%s\n' "${race[@]}"))
CGO_ENABLED=1 "$go" test -race "${flags[@]}" "${race[@]}" &
racing=$!
status=0
CGO_ENABLED=0 "$go" test "${flags[@]}" "${plain[@]}" || status=$?
wait "$racing" || status=$?
exit "$status"
