package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"time"

	"github.com/agentbot/agentbot/demo"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

// modelUsage says how "agentbot-demo model" is called.
const modelUsage = `usage: agentbot-demo model [--addr ADDR] SCRIPT|SUITE [-- COMMAND [ARG...]]

Serves recorded model answers as an OpenAI-compatible endpoint, which
agentbot reaches through AGENTBOT_LLM_BASE_URL as it reaches a real model:
a script file as any model name, or an eval suite's trajectories, each as
the model named after its task ("agentbot eval SUITE --model {task}").
With a COMMAND, runs it with AGENTBOT_LLM_BASE_URL set to the endpoint and
exits with its status; without, prints the base URL and serves until
interrupted.
`

// cmdModel serves the scripted model.
func cmdModel(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentbot-demo model", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), modelUsage)
		fs.PrintDefaults()
	}
	addr := fs.String("addr", "127.0.0.1:0", "the address to serve on")
	var command []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, command = args[:i], args[i+1:]
	}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("model: want one SCRIPT or SUITE")
	}
	models, err := demo.ScriptedModels(fs.Arg(0))
	if err != nil {
		return err
	}
	endpoint, err := llmtest.NewEndpoint(models)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	srv := &http.Server{Handler: endpoint.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	defer srv.Close()
	baseURL := "http://" + l.Addr().String() + "/v1"
	if len(command) == 0 {
		fmt.Fprintf(stdout, "AGENTBOT_LLM_BASE_URL=%s\n", baseURL)
		<-ctx.Done()
		return nil
	}
	cmd := exec.CommandContext(ctx, command[0], command[1:]...)
	cmd.Env = append(os.Environ(), "AGENTBOT_LLM_BASE_URL="+baseURL)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	// The command is stopped as agentbot's own signal handling expects,
	// and given time to clean its sandboxes up.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Run(); err != nil {
		if ee, ok := errors.AsType[*exec.ExitError](err); ok && ee.ExitCode() > 0 {
			return exitStatus(ee.ExitCode())
		}
		return fmt.Errorf("model: %s: %w", command[0], err)
	}
	return nil
}

// exitStatus is the status of the command run under the endpoint, which
// agentbot-demo exits with: eval's 1 says some runs failed.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
