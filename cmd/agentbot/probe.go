package main

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// defaultProbeURL is the intake's liveness route on its default address.
const defaultProbeURL = "http://127.0.0.1:8080/healthz"

// cmdProbe asks a health route and succeeds on a 2xx answer. It is the
// container image's HEALTHCHECK, which has no curl or wget to do it:
// "agentbot probe" for the intake, "agentbot probe
// http://127.0.0.1:9090/readyz" for a worker.
func cmdProbe(ctx context.Context, args []string, env Env) error {
	fs := newFlagSet("probe", env)
	setSynopsis(fs, "agentbot probe [--probe-timeout D] [URL] (default "+defaultProbeURL+")")
	timeout := fs.Duration("probe-timeout", 3*time.Second, "how long to wait for the answer")
	if err := parseFlags(fs, args, env); err != nil {
		return err
	}
	url := defaultProbeURL
	switch fs.NArg() {
	case 0:
	case 1:
		url = fs.Arg(0)
	default:
		return usageErrorf(fs, "want at most one URL, got %d", fs.NArg())
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return usageErrorf(fs, "%v", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("probe: %s answered %s", url, resp.Status)
	}
	return nil
}
