// Command gateway is hashgate: a REST API gateway keeping sessions, API-token metadata, quote
// drafts and escalation cases in Redis behind an OpenAPI contract.
//
//	gateway                 serve (REDIS_URL unset → embedded store)
//	gateway token mint ...  mint an API token against the configured Redis
//	gateway keygen          print fresh GATEWAY_SIGNING_KEYS and GATEWAY_HMAC_KEY values
//	gateway version         print the version
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// gcTuning is what main set for the collector (see gctune.go); serve logs it.
var gcTuning gcPlan

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	gcTuning = tuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintln(os.Stderr, "gateway:", err)
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

// run dispatches the subcommand; it returns when the command is done or ctx is cancelled.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return serve(ctx, getenv, stdout, stderr, nil)
	}
	switch args[0] {
	case "serve":
		return serve(ctx, getenv, stdout, stderr, nil)
	case "version", "--version", "-v":
		_, err := fmt.Fprintln(stdout, "hashgate", version)
		return err
	case "keygen":
		return keygen(args[1:], stdout)
	case "healthcheck":
		return healthcheck(ctx, getenv)
	case "token":
		if len(args) < 2 || args[1] != "mint" {
			return usageError{"usage: gateway token mint --tenant T --scope \"a b\" [--ttl 1h] [--subject S] [--type service|user] [--description D]"}
		}
		return mintCommand(ctx, args[2:], getenv, stdout)
	case "help", "-h", "--help":
		_, err := fmt.Fprint(stdout, usage)
		return err
	}
	return usageError{fmt.Sprintf("unknown command %q\n%s", args[0], usage)}
}

const usage = `usage:
  gateway                  serve the API (REDIS_URL unset: embedded store, printed bootstrap token)
  gateway token mint       --tenant T --scope "sessions:read ..." [--ttl 1h] [--subject S] [--type service|user]
  gateway keygen [--dir D] print fresh GATEWAY_SIGNING_KEYS / GATEWAY_HMAC_KEY values (or write them into D)
  gateway healthcheck      exit 0 when the local gateway answers /healthz (for container healthchecks)
  gateway version          print the version
Configuration is read from environment variables; see README.md.
`
