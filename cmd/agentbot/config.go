package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
)

// cmdConfig runs "agentbot config validate" and "agentbot config schema":
// the offline tools of repository admins and operators.
func cmdConfig(ctx context.Context, args []string, env Env) error {
	if len(args) > 0 {
		switch args[0] {
		case "validate":
			return configValidate(args[1:], env)
		case "schema":
			return configSchema(args[1:], env)
		case "init":
			return configInit(ctx, args[1:], env)
		}
	}
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprint(env.Stdout, configUsage)
		return flag.ErrHelp
	}
	fmt.Fprint(env.Stderr, configUsage)
	if len(args) == 0 {
		return &usageError{cmd: "agentbot config", err: errors.New("name a config command")}
	}
	return &usageError{cmd: "agentbot config", err: fmt.Errorf("unknown config command %q", args[0])}
}

const configUsage = `usage:
  agentbot config init [--repo DIR] [--check CMD]... [--stdout] [--verify]
      write .github/agent.yml as the tree shows it (toolchains, setup, image,
      the project's own checks); --verify runs setup and each check once
  agentbot config validate [--config server.yaml] [FILE...]
      check .github/agent.yml files (and the server config, when given);
      exit status 1 if any is invalid
  agentbot config schema
      print the JSON Schema of .github/agent.yml, for editors
`

// configValidate checks each policy file by itself and, with --config,
// against that server's caps, printing "FILE: ok" or the file's problems.
func configValidate(args []string, env Env) error {
	fs := newFlagSet("config validate", env)
	serverPath := fs.String("config", "", "server config (server.yaml) whose caps the files must respect")
	setSynopsis(fs, "agentbot config validate [--config server.yaml] [FILE...]")
	if err := parseFlags(fs, args, env); err != nil {
		return err
	}
	if fs.NArg() == 0 && *serverPath == "" {
		return usageErrorf(fs, "name a policy file or --config")
	}

	// Without a server config a file is checked by itself: nothing bounds
	// its images, network or limits.
	server := policy.ServerConfig{SetupNetwork: true}
	if *serverPath != "" {
		var err error
		if server, err = policy.LoadServerConfig(*serverPath); err != nil {
			fmt.Fprintln(env.Stderr, app.ErrorMessage(err))
			return &exitError{code: 1, err: fmt.Errorf("server config %s is invalid", *serverPath)}
		}
		fmt.Fprintf(env.Stdout, "%s: ok\n", *serverPath)
	}

	invalid := 0
	for _, file := range fs.Args() {
		p, err := validatePolicyFile(file, server)
		if err != nil {
			invalid++
			fmt.Fprintln(env.Stderr, err)
			continue
		}
		if p.RequireChecks() != nil {
			fmt.Fprintf(env.Stdout, "%s: ok, but no checks are defined: tasks are refused until checks: is set here or in the organisation's .github repository\n", file)
			continue
		}
		fmt.Fprintf(env.Stdout, "%s: ok\n", file)
	}
	if invalid > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d of %d files invalid", invalid, fs.NArg())}
	}
	return nil
}

// validatePolicyFile returns the policy file makes over the built-in
// defaults, or an error whose text lists every problem.
func validatePolicyFile(file string, server policy.ServerConfig) (policy.Policy, error) {
	info, err := os.Stat(file)
	if err != nil {
		return policy.Policy{}, err
	}
	// The worker refuses a file this large before reading it; so does this.
	if err := policy.CheckPolicySize(file, info.Size()); err != nil {
		return policy.Policy{}, errors.New(app.ErrorMessage(err))
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return policy.Policy{}, err
	}
	return validatePolicy(file, data, server)
}

// validatePolicy returns the policy data, the text of file, makes over the
// built-in defaults, or an error whose text lists every problem.
func validatePolicy(file string, data []byte, server policy.ServerConfig) (policy.Policy, error) {
	raw, err := policy.ParsePolicy(file, data)
	if err != nil {
		return policy.Policy{}, errors.New(app.ErrorMessage(err))
	}
	p, err := policy.BuildPolicy(server, raw)
	if err != nil {
		return policy.Policy{}, errors.New(app.ErrorMessage(err))
	}
	return p, nil
}

func configSchema(args []string, env Env) error {
	fs := newFlagSet("config schema", env)
	if err := parseFlags(fs, args, env); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf(fs, "config schema takes no arguments, got %q", fs.Args())
	}
	schema, err := policy.PolicySchema()
	if err != nil {
		return err
	}
	_, err = env.Stdout.Write(schema)
	return err
}
