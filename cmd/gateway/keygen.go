package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/keyhash"
)

// keygen prints fresh secrets in env-file form, or with --dir writes them once: the files
// signing-keys and hmac-key (0600) and the env file hashgate.env naming them (with REDIS_URL
// when given, and the bootstrap token's file beside them). A file that exists is kept, never
// overwritten: keys replaced under a running deployment would orphan every token and session.
// The secrets never go to a log.
func keygen(args []string, w io.Writer) error {
	fs := newFlagSet("keygen", "make the signing keys and HMAC key: print them (env-file lines), or with --dir write them once (files kept when present)")
	dir := fs.String("dir", "", "write signing-keys, hmac-key and hashgate.env into this folder (0700); existing files are kept")
	redisURL := fs.String("redis-url", "", "with --dir: REDIS_URL to put in hashgate.env")
	if help, err := parseFlags(fs, args, w); help || err != nil {
		return err
	}
	if *redisURL != "" && *dir == "" {
		return usageError{"keygen: --redis-url needs --dir\n" + flagUsage(fs)}
	}
	ks, err := auth.GenerateKeySet()
	if err != nil {
		return err
	}
	_, hk, err := keyhash.Generate()
	if err != nil {
		return err
	}
	if *dir == "" {
		_, err = fmt.Fprintf(w, "GATEWAY_SIGNING_KEYS=%s\nGATEWAY_HMAC_KEY=%s\n", ks.SeedString(), hk)
		return err
	}
	d, err := filepath.Abs(*dir)
	if err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	if err := os.MkdirAll(d, 0o700); err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	var env strings.Builder
	env.WriteString("# hashgate settings, read by `gateway` and `gateway token mint` (README, \"Configure it\").\n")
	if *redisURL != "" {
		fmt.Fprintf(&env, "REDIS_URL=%s\n", *redisURL)
	}
	fmt.Fprintf(&env, "GATEWAY_SIGNING_KEYS_FILE=%s\nGATEWAY_HMAC_KEY_FILE=%s\nGATEWAY_BOOTSTRAP_TOKEN_FILE=%s\n",
		filepath.Join(d, "signing-keys"), filepath.Join(d, "hmac-key"), filepath.Join(d, "bootstrap-token"))
	for _, f := range []struct{ name, val string }{
		{"signing-keys", ks.SeedString() + "\n"}, {"hmac-key", hk + "\n"}, {"hashgate.env", env.String()},
	} {
		if err := writeOnce(filepath.Join(d, f.name), f.val, w); err != nil {
			return fmt.Errorf("keygen: %w", err)
		}
	}
	return nil
}

// writeOnce creates path (0600) holding val, or keeps it when it exists; it says which on w.
func writeOnce(path, val string, w io.Writer) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		fmt.Fprintf(w, "kept existing %s\n", path)
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := f.WriteString(val); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote %s\n", path)
	return nil
}
