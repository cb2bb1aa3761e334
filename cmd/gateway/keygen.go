package main

import (
	"fmt"
	"io"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/keyhash"
)

// keygen prints fresh secrets in env-file form. They go to stdout only, never to a log.
func keygen(w io.Writer) error {
	ks, err := auth.GenerateKeySet()
	if err != nil {
		return err
	}
	_, hk, err := keyhash.Generate()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "GATEWAY_SIGNING_KEYS=%s\nGATEWAY_HMAC_KEY=%s\n", ks.SeedString(), hk)
	return err
}
