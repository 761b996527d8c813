// Package app is agentbot's domain: the task and its command (Task, Verb,
// State, the command grammar), the repository policy read from
// .github/agent.yml and its schema, the operator's server config, trust
// decisions, the conversation a model may read (only what people who may
// command wrote), user-facing errors, and the types of what a task reports and
// leaves behind (reactions, check conclusions, traces, outcomes).
//
// app talks to nothing: it links no GitHub client and no Docker. The GitHub
// App that reads and writes these types lives in app/github. Every other
// package imports app; app imports none of them.
package app
