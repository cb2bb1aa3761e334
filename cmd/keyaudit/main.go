// Command keyaudit scans Redis keyspaces and fails when a key has no TTL, matches no pattern
// documented in docs/KEYS.md, exceeds its declared bounds, or holds a secret produced during
// the test run. `make test` runs it against every real backend after the suite.
//
//	keyaudit --redis redis://127.0.0.1:6390 --redis 127.0.0.1:7000,127.0.0.1:7001 \
//	         --keys docs/KEYS.md --secrets .cache/secrets.txt
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/keyaudit"
	"github.com/hashgate/hashgate/internal/store"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, " ") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "keyaudit:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("keyaudit", flag.ContinueOnError)
	var urls multi
	fs.Var(&urls, "redis", "REDIS_URL of a deployment to scan (repeatable)")
	keysFile := fs.String("keys", "docs/KEYS.md", "the key declarations")
	secretsFile := fs.String("secrets", "", "secrets produced during the run (`kind value` lines)")
	match := fs.String("match", "*", "SCAN MATCH pattern")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(urls) == 0 {
		return errors.New("no --redis given")
	}
	f, err := os.Open(*keysFile)
	if err != nil {
		return err
	}
	decls, err := keyaudit.ParseDecls(f)
	f.Close()
	if err != nil {
		return err
	}
	var secrets keyaudit.Secrets
	if *secretsFile != "" {
		sf, err := os.Open(*secretsFile)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if err == nil {
			secrets, err = keyaudit.ParseSecrets(sf)
			sf.Close()
			if err != nil {
				return err
			}
		}
	}
	failed := 0
	for _, u := range urls {
		opt, err := store.ClientOption(u)
		if err != nil {
			return err
		}
		opt.DisableCache = true
		c, err := rueidis.NewClient(opt)
		if err != nil {
			return fmt.Errorf("%s: %w", config.MaskURL(u), err)
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		rep, err := (&keyaudit.Auditor{Client: c, Decls: decls, Secrets: secrets, Match: *match}).Run(cctx)
		cancel()
		c.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "keyaudit %s: %d keys, %d violations (%d secrets checked)\n", config.MaskURL(u), rep.Keys,
			len(rep.Violations), len(secrets.Substrings)+len(secrets.Exact))
		for i, v := range rep.Violations {
			if i == 50 {
				fmt.Fprintf(out, "  ... %d more\n", len(rep.Violations)-50)
				break
			}
			fmt.Fprintln(out, "  "+v.String())
		}
		failed += len(rep.Violations)
	}
	if failed > 0 {
		return fmt.Errorf("%d violations", failed)
	}
	return nil
}
