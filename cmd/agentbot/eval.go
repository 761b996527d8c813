package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/eval"
	"github.com/agentbot/agentbot/runner/llm"
)

// cmdEval runs a suite of tasks through the loop and the sandbox and
// reports, per task and in total, how many were solved and passed their
// hidden tests, and what they cost. The model is the endpoint of
// AGENTBOT_LLM_BASE_URL, as for agentbot run: a suite's trajectories are
// replayed by serving them there (agentbot-demo model SUITE).
func cmdEval(ctx context.Context, args []string, env Env) error {
	if len(args) > 0 && args[0] == "capture" {
		return cmdEvalCapture(ctx, args[1:], env)
	}
	fs := newFlagSet("eval", env)
	modelName := fs.String("model", "", "the model that edits every task, "+eval.TaskPlaceholder+" standing for the task's name; default each task's model.edit")
	runs := fs.Int("runs", 1, "runs of each task; the report gives success rates and means")
	// One at a time by default: a run's time is part of its score, and runs
	// sharing the machine's cores, or a model endpoint's rate limit, measure
	// each other as much as the model.
	parallel := fs.Int("parallel", 1, "runs, of any tasks, that go at once; the report's order stays the suite's")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	var sb sandboxFlags
	sb.registerContainers(fs)
	sb.registerOlderNames(fs)
	dataDir := fs.String("data-dir", "", "where the image's seed of $HOME is kept for the next evaluation (envs/ in it), as a worker's --data-dir; default the worker's")
	var envFlags envCacheFlags
	envFlags.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: agentbot eval SUITE_DIR [--model M] [--runs N] [--parallel N] [--json]\n       agentbot eval capture OWNER/REPO#PR --out SUITE_DIR (see eval capture -h)")
		fs.PrintDefaults()
	}
	dir, err := parseWithArg(fs, args, env)
	if err != nil {
		return err
	}
	if *runs < 1 {
		return usageErrorf(fs, "--runs %d: want 1 or more", *runs)
	}
	if *parallel < 1 {
		return usageErrorf(fs, "--parallel %d: want 1 or more", *parallel)
	}
	suite, err := eval.Load(dir)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	// The per-run progress lines say what the loop's own info logs would.
	// Runs going at once share stderr, a line to a write.
	stderr := &lockedWriter{w: env.Stderr}
	cfg := eval.Config{ModelName: *modelName, Runs: *runs, Parallel: *parallel,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	llmCfg, err := llm.ConfigFromEnv(env.Getenv)
	if err != nil {
		return err
	}
	if llmCfg.BaseURL == "" && llmCfg.APIKey == "" {
		return errors.New("eval: no model endpoint: set AGENTBOT_LLM_BASE_URL (and AGENTBOT_LLM_API_KEY); " +
			"make eval serves the suite's trajectories as one (agentbot-demo model SUITE)")
	}
	client, err := llm.New(llmCfg)
	if err != nil {
		return err
	}
	cfg.Model = func(eval.Task) (agent.Model, func(), error) { return client, func() {}, nil }
	drv, err := sb.driver(ctx, fmt.Sprintf("eval-%d", os.Getpid()), nil)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	defer drv.Close()
	cfg.Driver = drv
	if cfg.Envs, err = envFlags.open(*dataDir); err != nil {
		return fmt.Errorf("eval: open the environment cache: %w", err)
	}
	cfg.Done = func(r eval.Result) {
		fmt.Fprintf(stderr, "%s run %d: %s, hidden %s, %d iterations, %d tokens, $%.4f, %.1fs\n",
			r.Task, r.Run, solvedText(r), r.Hidden, r.Iterations, r.Tokens, r.CostUSD, r.Seconds)
	}

	rep, err := eval.Run(ctx, suite, cfg)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	if *asJSON {
		err = rep.WriteJSON(env.Stdout)
	} else {
		err = rep.WriteTable(env.Stdout)
	}
	if err != nil {
		return err
	}
	if !rep.Passed() {
		// The report is the answer; the status lets a CI job gate on it.
		return &exitError{code: 1, err: fmt.Errorf("eval: %d of %d runs solved, %d of %d passed their hidden tests",
			rep.Total.Solved, rep.Total.Runs, rep.Total.HiddenPassed, rep.Total.HiddenRuns)}
	}
	return nil
}

// parseWithArg parses flags on either side of one positional argument, as
// in "eval SUITE_DIR --runs 3", where the flag package alone would stop.
func parseWithArg(fs *flag.FlagSet, args []string, env Env) (string, error) {
	if err := parseFlags(fs, args, env); err != nil {
		return "", err
	}
	var rest []string
	for fs.NArg() > 0 {
		rest = append(rest, fs.Arg(0))
		if err := parseArgs(fs, fs.Args()[1:], env); err != nil {
			return "", err
		}
	}
	if len(rest) != 1 {
		return "", usageErrorf(fs, "want one SUITE_DIR, got %d arguments", len(rest))
	}
	return rest[0], nil
}

// lockedWriter lets concurrent runs write whole lines to one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func solvedText(r eval.Result) string {
	if r.Solved {
		return "solved"
	}
	if r.Error != "" {
		return "failed (" + r.Error + ")"
	}
	return "failed (" + r.Stop + ")"
}
