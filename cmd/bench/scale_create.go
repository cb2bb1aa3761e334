package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashgate/hashgate/client"
	"github.com/hashgate/hashgate/internal/app"
	gwconfig "github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/sessions"
	"github.com/hashgate/hashgate/internal/store"
)

// sessionCreator creates one session for a user and returns its token.
type sessionCreator func(ctx context.Context, userID string) (string, error)

// apiCreator creates sessions through POST /v1/sessions (the public Go client).
func apiCreator(a *api) sessionCreator {
	return func(ctx context.Context, userID string) (string, error) {
		rsp, err := client.Check(a.cl.CreateSessionWithResponse(ctx, client.SessionCreateRequest{UserId: userID, AuthLevel: client.AuthLevelBASIC}))
		if err != nil {
			return "", fmt.Errorf("POST /v1/sessions: %w", err)
		}
		if rsp.JSON201 == nil || rsp.JSON201.Token == "" {
			return "", fmt.Errorf("POST /v1/sessions: no token in the answer")
		}
		return rsp.JSON201.Token, nil
	}
}

// repoCreator creates sessions in this process through the gateway's own session service
// (internal/app built from the gateway's environment: the same keys, prefix and defaults, so
// the gateway processes accept the tokens), on a store with a 5 s Redis timeout and no
// client-side cache. It skips HTTP, which on 2 cores is most of a creation's cost.
func repoCreator(ctx context.Context, env []string) (sessionCreator, func(), error) {
	vars := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	cfg, err := gwconfig.Load(func(k string) string { return vars[k] })
	if err != nil {
		return nil, nil, err
	}
	cfg.RedisTimeout, cfg.RedisClientCache = 5*time.Second, false
	s, err := store.Open(ctx, app.StoreOptions(cfg))
	if err != nil {
		return nil, nil, fmt.Errorf("scale: open the store: %w", err)
	}
	if err := s.LoadScripts(ctx, app.ScriptBodies()...); err != nil {
		s.Close()
		return nil, nil, err
	}
	g, err := app.New(cfg, s, app.Options{})
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	g.Start() // its background loops, as a gateway's: the session events' relay among them
	create := func(ctx context.Context, userID string) (string, error) {
		is, err := g.Sessions.Create(ctx, cfg.BootstrapTenant, sessions.CreateInput{UserID: userID, AuthLevel: string(client.AuthLevelBASIC)})
		if err != nil {
			return "", fmt.Errorf("sessions.Create: %w", err)
		}
		return is.Token, nil
	}
	return create, func() { g.Stop(); s.Close() }, nil
}
