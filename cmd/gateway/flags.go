package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashgate/hashgate/internal/config"
)

// cmdFlags is a subcommand's flag set and its one-line description for --help.
type cmdFlags struct {
	*flag.FlagSet
	what string
}

func newFlagSet(name, what string) *cmdFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &cmdFlags{FlagSet: fs, what: what}
}

// parseFlags parses args into fs. On -h/--help it prints the command's usage and flags to
// stdout and reports help: the caller then returns at once (exit 0, nothing else done). Bad
// flags and stray arguments are a usageError listing the flags.
func parseFlags(fs *cmdFlags, args []string, stdout io.Writer) (help bool, err error) {
	err = fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		_, err = io.WriteString(stdout, flagUsage(fs))
		return true, err
	case err != nil:
		return false, usageError{fmt.Sprintf("%s: %v\n%s", fs.Name(), err, flagUsage(fs))}
	case fs.NArg() > 0:
		return false, usageError{fmt.Sprintf("%s: unexpected argument %q\n%s", fs.Name(), fs.Arg(0), flagUsage(fs))}
	}
	return false, nil
}

// flagUsage is "usage: gateway <name> [flags]", the description and every flag with its default.
func flagUsage(fs *cmdFlags) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: gateway %s [flags]\n  %s\n", fs.Name(), fs.what)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		b.WriteString("(no flags)\n")
		return b.String()
	}
	b.WriteString("flags:\n")
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	return b.String()
}

// envOnly parses the flags of a subcommand whose only flag is --env-file and loads the
// settings; done is true when the command has nothing more to do (--help answered, or err).
func envOnly(fs *cmdFlags, args []string, env environ, stdout io.Writer) (e config.Env, done bool, err error) {
	envFile := envFileFlag(fs)
	if help, err := parseFlags(fs, args, stdout); help || err != nil {
		return e, true, err
	}
	e, err = loadEnv(env, *envFile)
	return e, err != nil, err
}

// envFileFlag adds --env-file to fs.
func envFileFlag(fs *cmdFlags) *string {
	return fs.String("env-file", "", "read settings from this env file under the environment (default: $"+config.EnvFileVar+", else $XDG_STATE_HOME/hashgate/hashgate.env when it exists)")
}

// stateDir is where the gateway keeps its files on a workstation: $XDG_STATE_HOME/hashgate,
// else ~/.local/state/hashgate; "" when neither is known (a container without HOME).
func stateDir(getenv func(string) string) string {
	if d := getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "hashgate")
	}
	if h := getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", "hashgate")
	}
	return ""
}

// envFileName is the env file settings are read from: the flag, else GATEWAY_ENV_FILE (both
// must exist), else the state folder's hashgate.env when it exists, else none.
func envFileName(env environ, flagPath string) string {
	if flagPath != "" {
		return flagPath
	}
	if p := strings.TrimSpace(env.getenv(config.EnvFileVar)); p != "" {
		return p
	}
	if d := stateDir(env.getenv); d != "" {
		p := filepath.Join(d, "hashgate.env")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// loadEnv is the settings source of a command: env over the env file named as envFileName says.
func loadEnv(env environ, flagPath string) (config.Env, error) {
	e := config.Env{Lookup: env.getenv}
	path := envFileName(env, flagPath)
	if path == "" {
		return e, nil
	}
	vars, err := config.ReadEnvFile(path)
	if err != nil {
		return e, err
	}
	e.File, e.FilePath = vars, path
	return e, nil
}
