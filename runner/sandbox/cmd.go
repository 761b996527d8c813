package sandbox

import "time"

// Cmd is one command for the executor inside a container. Exactly one of
// Argv and Shell is set; Shell runs under "sh -c".
type Cmd struct {
	Argv    []string      `json:"argv,omitempty"`
	Shell   string        `json:"shell,omitempty"`
	Dir     string        `json:"dir,omitempty"` // relative to the work tree
	Env     []string      `json:"env,omitempty"` // KEY=VALUE, added to the sandbox's own minimal env
	Stdin   []byte        `json:"stdin,omitempty"`
	Timeout time.Duration `json:"timeout,omitempty"` // 0 means DefaultTimeout
	// OutputLimit is how many bytes of each of stdout and stderr are kept
	// (half from the start, half from the end); 0 means DefaultOutputLimit.
	OutputLimit int `json:"output_limit,omitempty"`
	// MaxTreeGrowth is how many bytes of disk the work tree may take past
	// its size when the executor started (or past its size when this
	// command starts, if that is more) before the command is killed with
	// every process it started; 0 means DefaultMaxTreeGrowth. The tree is
	// measured while the command runs, so it can overshoot by what is
	// written between two measurements.
	MaxTreeGrowth int64 `json:"max_tree_growth,omitempty"`
}

// Result is what a command did. Output is capped: the head and the tail are
// kept and the number of bytes dropped between them is reported.
type Result struct {
	ExitCode      int           `json:"exit_code"`
	Stdout        []byte        `json:"stdout,omitempty"`
	Stderr        []byte        `json:"stderr,omitempty"`
	StdoutDropped int64         `json:"stdout_dropped,omitempty"`
	StderrDropped int64         `json:"stderr_dropped,omitempty"`
	Duration      time.Duration `json:"duration"`
	TimedOut      bool          `json:"timed_out,omitempty"`
	OOMKilled     bool          `json:"oom_killed,omitempty"`
	// TreeFull says the command was killed because the work tree grew past
	// its limit (Cmd.MaxTreeGrowth); Stderr ends with a line saying so.
	TreeFull bool `json:"tree_full,omitempty"`
}
