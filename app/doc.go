// Package app is agentbot's domain: the task and its command (Task, Verb,
// State, the command grammar), who wrote a command and the decision on
// it, the conversation a model may read (only what people who may
// command wrote), user-facing errors, and the types of what a task reports and
// leaves behind (reactions, check conclusions, traces, outcomes).
//
// app talks to nothing: it links no GitHub client and no Docker. The GitHub
// App that reads and writes these types lives in app/github, the policy
// language (.github/agent.yml, the server config) in app/policy. Every
// other package imports app; app imports none of them.
package app
