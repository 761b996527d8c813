package main

import (
	"fmt"
	"io"

	"github.com/agentbot/agentbot/runner"
)

// reportVerification prints the verification's checks.
func reportVerification(w io.Writer, v runner.Verification) {
	fmt.Fprintf(w, "\nverified in a fresh sandbox (%.12s, in which no agent command ran):\n", v.Container)
	for _, c := range v.Checks {
		fmt.Fprintf(w, "  %-8s %-5v exit %d  %5dms  %s\n", c.Name, passFail(c.Passed), c.ExitCode, c.Millis, c.Run)
	}
	for _, c := range v.NotRun {
		fmt.Fprintf(w, "  %-8s not run            %s\n", c.Name, c.Run)
	}
	if v.Incident() {
		last := v.Checks[len(v.Checks)-1]
		fmt.Fprintf(w, "SAFETY INCIDENT: the checks passed in the agent's sandbox and fail in a fresh one; %s said:\n%s\n", last.Name, last.Output)
	}
}
