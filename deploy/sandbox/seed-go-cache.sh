#!/bin/sh
# Seeds a Go build cache at $1 for the image's seed of $HOME, so that a
# task's first "go test" compiles and vets only the repository's own
# packages: the standard library compiled, and the facts "go test"'s vet
# needs of each public package (without them, the first "go test" of a
# package that imports only testing vets seventy others). Run by both
# Dockerfile and build-offline.sh, as root, with the toolchain at
# /usr/local/go.
set -eu
export HOME=/tmp GOCACHE="$1/.cache/go-build" PATH=/usr/local/go/bin:$PATH
mkdir -p "$GOCACHE"
go build std
dir=$(mktemp -d)
cd "$dir"
printf 'module seed\n\ngo 1.22\n' >go.mod
{
	echo 'package seed'
	go list std | grep -vE '(^|/)(internal|vendor)(/|$)|^cmd/|^runtime/cgo$|^plugin$' | sed 's/.*/import _ "&"/'
} >seed.go
printf 'package seed\n\nimport "testing"\n\nfunc TestSeed(*testing.T) {}\n' >seed_test.go
go test -count=1 . >/dev/null
cd /
rm -rf "$dir"
