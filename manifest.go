// Package agentbot holds what the repository's root gives the binary: the
// GitHub App manifest, app.yml, which stays at the root by the Probot
// convention and is embedded so that "agentbot setup" works from an
// installed binary or the container image, outside a checkout.
package agentbot

import _ "embed"

// Manifest is app.yml, the GitHub App manifest "agentbot setup" registers.
//
//go:embed app.yml
var Manifest []byte
