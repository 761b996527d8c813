// Package github is an in-process GitHub: the REST subset agentbot uses,
// git over smart HTTP backed by real bare repositories, signed webhook
// deliveries and the App manifest flow. Tests and `make demo` run agentbot
// against it because no real GitHub is reachable from our machines.
//
// The simulator is only useful if it answers as GitHub does, so every
// response shape of the operations in the shared OpenAPI subset
// (../shared/fixtures/github-rest-openapi-subset.json) is validated against
// that description in this package's tests, with real field names, status
// codes, error bodies, html_urls, node_ids and timestamps; the answers are
// also compared field by field with GitHub's documented examples, and the
// webhooks with GitHub's real payloads. Where GitHub surprises clients,
// the simulator does too: a pulls?head= filter without "owner:" is
// ignored, a second pull request for a branch is refused, bodies over
// 65,536 characters are refused, and a fault can strike after the write.
//
// # Layout
//
// New starts one HTTP server on 127.0.0.1. It plays both hosts of a GitHub
// Enterprise Server:
//
//   - /api/v3/...: the REST API. APIURL returns this base, so go-github's
//     WithEnterpriseURLs(base, base) and ghinstallation's BaseURL work
//     unchanged. Beyond the subset's 16 operations it serves what the
//     App flows need: GET /app, installations, branches, issue labels and
//     reactions, requested reviewers, reviews, review comments and their replies,
//     reactions on review comments (routes.go lists them all). The Git
//     database operations (blobs, trees, commits, refs; gitdb.go) write
//     real objects into the bare repository, so git reads what a client
//     built; a commit the App makes naming no author or committer is
//     signed with the simulator's key and its verification says "valid",
//     as GitHub's do (CommitVerification reads it), and a tree touching
//     .github/workflows without workflows: write is a bare 404.
//   - /OWNER/REPO.git/...: git smart HTTP, served by `git http-backend`
//     through net/http/cgi; this is each repository's clone_url.
//   - /settings/apps/new (and /organizations/ORG/settings/apps/new): the
//     page the App manifest form posts to; it redirects to the manifest's
//     redirect_url with a one-time code and the caller's state, which
//     POST /api/v3/app-manifests/{code}/conversions exchanges for the App's
//     credentials.
//
// # Identity and authorisation
//
// The simulator owns one GitHub App, generated at start (App). Routes
// under /app are authenticated with the App's JWT (RS256, iss = app id,
// checked against the App's public key, expired or too long-lived tokens
// refused). Everything else takes an installation token minted by
// POST /app/installations/{id}/access_tokens, which honours the
// repositories/repository_ids and permissions the caller asks for and
// expires after an hour. A token used on a repository outside its scope
// gets GitHub's 404; a token lacking the permission a route needs gets
// 403 "Resource not accessible by integration". Git accepts the token as
// Basic auth (x-access-token:TOKEN, the canonical form) or as a bearer
// header; pushing needs contents: write, and a push whose commits create
// or change a file under .github/workflows also needs workflows: write
// (a pre-receive hook answers with GitHub's refusal).
//
// # Driving it from a test
//
// A test builds the world with AddInstallation, AddRepo (a real bare
// repository on branch main with an initial commit), AddFork,
// SetPermission, AddIssue, AddComment, AddPullRequest, AddReview,
// AddReviewComment and AddAttachment (a file served under
// /user-attachments/assets/, as GitHub serves what people drop into a
// comment); acts as GitHub
// toward the bot with Deliver and the Deliver* helpers, which make the
// change and send the payload signed as GitHub does; injects failures with
// Inject (5xx, primary and secondary rate limits, latency, and failures
// that strike after the write took effect) and ExpireTokens; and reads
// what the bot did through accessors that return copies (Comments, Issue,
// PullRequests, CheckRuns, ReviewComments, Reviews, BranchSHA, Branches,
// Deliveries). With SetWebhookURL the App's own writes come back as
// webhooks, as they do on GitHub. All state is safe for concurrent use.
//
// Merging is done by the test, as a person pressing the merge button:
// Merge and DeliverMerge (merge commit, squash or rebase, with the
// pull_request "closed" event), Commit, CreateBranch and RevertCommit for
// people's own commits, and DeliverPush for the push event.
//
// What is not simulated: closing without merging, the merge API, labels'
// metadata beyond their names, teams, and GitHub's following of symbolic
// links in the contents API.
package github
