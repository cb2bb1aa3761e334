package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/keyhash"
)

// keygen prints fresh secrets in env-file form, or with --dir writes them as the files
// signing-keys and hmac-key (mode 0600) unless they already exist, for GATEWAY_*_FILE. They
// never go to a log.
func keygen(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("keygen", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("dir", "", "write signing-keys and hmac-key into this folder (kept if present)")
	if err := fs.Parse(args); err != nil {
		return usageError{"keygen: " + err.Error()}
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
	for name, val := range map[string]string{"signing-keys": ks.SeedString(), "hmac-key": hk} {
		path := filepath.Join(*dir, name)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			fmt.Fprintf(w, "kept existing %s\n", path)
			continue
		}
		if err != nil {
			return fmt.Errorf("keygen: %w", err)
		}
		if _, err := f.WriteString(val + "\n"); err != nil {
			f.Close()
			return fmt.Errorf("keygen: %w", err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("keygen: %w", err)
		}
		fmt.Fprintf(w, "wrote %s\n", path)
	}
	return nil
}
