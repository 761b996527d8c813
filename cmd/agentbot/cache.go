package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"
	"time"

	units "github.com/docker/go-units"

	"github.com/agentbot/agentbot/runner/envcache"
	"github.com/agentbot/agentbot/runner/workspace"
)

// envCacheFlags say where a worker keeps its prepared environments and
// how many bytes they may take.
type envCacheFlags struct {
	dir string
	max byteSize
}

func (f *envCacheFlags) register(fs *flag.FlagSet) {
	f.max = envcache.DefaultMaxBytes
	fs.StringVar(&f.dir, "env-cache-dir", "", "where the prepared environments are kept; workers of one machine that name the same directory share them (default: envs under --data-dir)")
	fs.Var(&f.max, "env-cache-max", "bytes the prepared environments of this worker may take, such as 20GiB; the least recently used go first")
}

// open opens the environment cache at --env-cache-dir, or under dataDir
// (the worker's --data-dir, or its default).
func (f *envCacheFlags) open(dataDir string) (*envcache.Cache, error) {
	if f.dir != "" {
		return envcache.Open(f.dir, int64(f.max), nil)
	}
	if dataDir == "" {
		d, err := workspace.DefaultDataDir()
		if err != nil {
			return nil, err
		}
		dataDir = d
	}
	return envcache.Open(filepath.Join(dataDir, "envs"), int64(f.max), nil)
}

// byteSize is a flag of bytes written as 20GiB, 512MiB or 1000.
type byteSize int64

func (b *byteSize) String() string { return units.BytesSize(float64(*b)) }

func (b *byteSize) Set(v string) error {
	n, err := units.RAMInBytes(v)
	if err != nil || n <= 0 {
		return fmt.Errorf("%q is not a size such as 20GiB", v)
	}
	*b = byteSize(n)
	return nil
}

// cmdCache lists and prunes the prepared environments of the worker whose
// data directory is --data-dir.
func cmdCache(ctx context.Context, args []string, env Env) error {
	const synopsis = "agentbot cache list [--data-dir DIR] | agentbot cache prune [--repo R] [--owner O] [--all] [--data-dir DIR]"
	switch {
	case len(args) == 0:
		return &usageError{cmd: "agentbot cache", err: errors.New("name a cache command: list or prune")}
	case isHelp(args[0]):
		fmt.Fprintln(env.Stdout, "usage: "+synopsis)
		return flag.ErrHelp
	case args[0] != "list" && args[0] != "prune":
		return &usageError{cmd: "agentbot cache", err: fmt.Errorf("unknown cache command %q", args[0])}
	}
	verb := args[0]
	fs := newFlagSet("cache "+verb, env)
	setSynopsis(fs, synopsis)
	dataDir := fs.String("data-dir", "", "the worker's data directory (default: agentbot under the user's cache directory)")
	var cf envCacheFlags
	cf.register(fs)
	repo, owner, all := new(string), new(string), new(bool)
	if verb == "prune" {
		repo = fs.String("repo", "", "remove only this repository's environments (owner/name)")
		owner = fs.String("owner", "", "remove only the environments of this owner, as cache list shows it (github:repo=ID,inst=ID or local:PATH)")
		all = fs.Bool("all", false, "remove every environment, not only those over --env-cache-max")
	}
	if err := parseFlags(fs, args[1:], env); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf(fs, "unexpected argument %q", fs.Arg(0))
	}
	c, err := cf.open(*dataDir)
	if err != nil {
		return err
	}
	if verb == "list" {
		list, err := c.List()
		if err != nil {
			return err
		}
		return printEnvs(env.Stdout, list, c.Max())
	}
	removed, busy, err := c.Prune(envcache.PruneOptions{Repo: *repo, Owner: *owner, All: *all})
	var freed int64
	for _, e := range removed {
		freed += e.Size
	}
	fmt.Fprintf(env.Stdout, "removed %d environments (%s)", len(removed), units.BytesSize(float64(freed)))
	if busy > 0 {
		fmt.Fprintf(env.Stdout, "; %d in use kept", busy)
	}
	fmt.Fprintln(env.Stdout)
	return err
}

func printEnvs(w io.Writer, list []envcache.Entry, max int64) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tOWNER\tREPOSITORY\tIMAGE\tSIZE\tUSED\tCREATED")
	var total int64
	for _, e := range list {
		total += e.Size
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Key, printable(e.Owner.String()), printable(e.Repo), printable(e.Image), units.BytesSize(float64(e.Size)),
			e.Used.Format(time.DateTime), e.Created.Format(time.DateTime))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d environments, %s of %s\n", len(list), units.BytesSize(float64(total)), units.BytesSize(float64(max)))
	return err
}
