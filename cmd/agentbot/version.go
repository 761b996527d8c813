package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// buildVersion is what "agentbot version" reports, read from the build
// information the Go toolchain writes into every binary.
type buildVersion struct {
	Version  string `json:"version"`            // the module's: v1.2.3, a pseudo-version, or (devel)
	Commit   string `json:"commit,omitempty"`   // the VCS revision built, when built from a checkout
	Time     string `json:"time,omitempty"`     // that revision's commit time
	Modified bool   `json:"modified,omitempty"` // the checkout had uncommitted changes
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

func readBuildVersion() buildVersion {
	v := buildVersion{Version: "(unknown)", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Version, v.Go = info.Main.Version, info.GoVersion
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the one line "agentbot version" prints.
func (v buildVersion) String() string {
	commit := "commit unknown"
	if v.Commit != "" {
		commit = "commit " + v.Commit
		if v.Modified {
			commit += " (modified)"
		}
	}
	return fmt.Sprintf("agentbot %s, %s, %s %s", v.Version, commit, v.Go, v.Platform)
}

// cmdVersion prints the version, commit and Go toolchain of this binary.
func cmdVersion(_ context.Context, args []string, env Env) error {
	fs := newFlagSet("version", env)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args, env); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf(fs, "unexpected argument %q", fs.Arg(0))
	}
	v := readBuildVersion()
	if *asJSON {
		return printJSON(env.Stdout, v)
	}
	_, err := fmt.Fprintln(env.Stdout, v)
	return err
}
