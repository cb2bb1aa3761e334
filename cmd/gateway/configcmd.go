package main

import (
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"

	"github.com/hashgate/hashgate/internal/config"
)

// configCommand is `gateway config`: every setting, its value (secrets masked), its default
// and where the value came from (env, env file, default), then the misspelt GATEWAY_* names.
func configCommand(args []string, env environ, stdout io.Writer) error {
	fs := newFlagSet("config", "print every setting, its default and where its value came from (env, env file, default); secrets masked")
	e, done, err := envOnly(fs, args, env, stdout)
	if done {
		return err
	}
	cfg, cerr := config.LoadEnv(e)
	if e.FilePath != "" {
		fmt.Fprintf(stdout, "# env file: %s\n", e.FilePath)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SETTING\tVALUE\tDEFAULT\tSOURCE")
	for _, s := range cfg.Settings(e) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, orDash(s.Value), orDash(s.Default), s.Source)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, u := range unknownNames(e, env.names) {
		fmt.Fprintf(stdout, "# unknown variable %s ignored: did you mean %s?\n", u.Name, u.Nearest)
	}
	if cerr != nil {
		return fmt.Errorf("config: %w", cerr)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// unknownNames are the GATEWAY_* names of the environment and the env file no setting reads.
func unknownNames(e config.Env, names []string) []config.Unknown {
	all := append([]string(nil), names...)
	for k := range e.File {
		all = append(all, k)
	}
	return config.UnknownNames(all)
}

// warnUnknown logs each unknown GATEWAY_* variable with the known name nearest to it: a
// misspelt setting is otherwise silently ignored.
func warnUnknown(log *slog.Logger, e config.Env, names []string) {
	for _, u := range unknownNames(e, names) {
		log.Warn("unknown variable ignored", "name", u.Name, "did_you_mean", u.Nearest)
	}
}
