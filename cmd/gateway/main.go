// Command gateway is hashgate: a REST API gateway keeping sessions, API-token metadata, quote
// drafts and escalation cases in Redis behind an OpenAPI contract.
//
//	gateway [serve]         serve (REDIS_URL unset → embedded store)
//	gateway token mint ...  mint an API token against the configured Redis
//	gateway keygen          make GATEWAY_SIGNING_KEYS and GATEWAY_HMAC_KEY (print, or write once)
//	gateway config          print every setting, its default and where its value came from
//	gateway healthcheck     exit 0 when the local gateway answers /healthz
//	gateway version         print the version
//
// Every command reads the process environment over an env file (--env-file, GATEWAY_ENV_FILE
// or the default in the state folder), and answers -h/--help with its flags.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// gcTuning is what main set for the collector (see gctune.go); serve logs it.
var gcTuning gcPlan

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	gcTuning = tuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	env := environ{getenv: os.Getenv, names: envNames(os.Environ())}
	err := runEnv(ctx, os.Args[1:], env, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

// environ is the process environment a command reads: lookup by name, and the names set (for
// the warning about unknown GATEWAY_* variables; nil in tests that need none).
type environ struct {
	getenv func(string) string
	names  []string
}

func envNames(kv []string) []string {
	out := make([]string, 0, len(kv))
	for _, s := range kv {
		if k, _, ok := strings.Cut(s, "="); ok {
			out = append(out, k)
		}
	}
	return out
}

// run is runEnv over getenv with no environment names to check.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return runEnv(ctx, args, environ{getenv: getenv}, stdout, stderr)
}

// runEnv dispatches the subcommand; it returns when the command is done or ctx is cancelled.
func runEnv(ctx context.Context, args []string, env environ, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && !isHelp(args[0]) && args[0] != "--version" && args[0] != "-v" {
		return serveCommand(ctx, args, env, stdout, stderr)
	}
	switch args[0] {
	case "serve":
		return serveCommand(ctx, args[1:], env, stdout, stderr)
	case "version", "--version", "-v":
		return versionCommand(args[1:], stdout)
	case "keygen":
		return keygen(args[1:], stdout)
	case "healthcheck":
		return healthcheck(ctx, args[1:], env, stdout)
	case "config":
		return configCommand(args[1:], env, stdout)
	case "token":
		if len(args) >= 2 && isHelp(args[1]) {
			_, err := fmt.Fprint(stdout, "usage: gateway token mint [flags]   (gateway token mint --help lists them)\n")
			return err
		}
		if len(args) < 2 || args[1] != "mint" {
			return usageError{"usage: gateway token mint [flags]   (gateway token mint --help lists them)"}
		}
		return mintCommand(ctx, args[2:], env, stdout)
	case "rules":
		return rulesCommand(args[1:], stdout)
	case "help", "-h", "--help":
		_, err := fmt.Fprint(stdout, usage)
		return err
	}
	return usageError{fmt.Sprintf("unknown command %q\n%s", args[0], usage)}
}

func isHelp(a string) bool { return a == "-h" || a == "--help" || a == "-help" }

// versionCommand prints the version.
func versionCommand(args []string, stdout io.Writer) error {
	fs := newFlagSet("version", "print the version")
	if help, err := parseFlags(fs, args, stdout); help || err != nil {
		return err
	}
	_, err := fmt.Fprintln(stdout, "hashgate", version)
	return err
}

const usage = `usage:
  gateway [serve]          serve the API (REDIS_URL unset: embedded store on 127.0.0.1:8080, printed admin token)
  gateway token mint       mint an API token: --tenant T --scope "sessions:read ..." [--ttl 1h] [--subject S]
  gateway keygen [--dir D] make GATEWAY_SIGNING_KEYS / GATEWAY_HMAC_KEY: print them, or write them once into D
                           with an env file (D/hashgate.env) naming them
  gateway config           print every setting, its default and where its value came from (secrets masked)
  gateway rules check FILE check an access rules file (GATEWAY_ACCESS_RULES): exit 0, or 1 with errors by line
  gateway rules explain FILE --method M --host H --uri U [--kind --level --groups --scopes]
                           say which rule decides a forwarded request and why
  gateway healthcheck      exit 0 when the local gateway answers /healthz (for container healthchecks)
  gateway version          print the version
Every command answers -h/--help with its flags. Settings are environment variables (README.md,
"Configure it"), read over an env file: --env-file, GATEWAY_ENV_FILE, or
$XDG_STATE_HOME/hashgate/hashgate.env (~/.local/state/hashgate/hashgate.env) when it exists.
`
