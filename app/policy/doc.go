// Package policy is the policy language: a repository's .github/agent.yml
// and the operator's server config, decoded strictly (unknown keys and
// wrong types are errors with their line), then built into validated
// types under the server's caps (raw.go, decode.go, build.go, the JSON
// Schema in schema.go); the sections they hold (checks, setup, sandbox,
// paths, limits, tools, quality, plan, review, pull requests, budgets,
// registries) with the methods that read them; the starter policies of
// config init; and the Authorizer that applies the trigger section to a
// command.
//
// It imports app, whose domain types and user-facing errors it speaks in;
// app imports nothing of it. It links no GitHub client and no Docker.
package policy
