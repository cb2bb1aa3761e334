package main

import "context"

// wireDomains plugs the domain services (tokens, sessions, quotes, cases) into a.deps and
// registers their background loops.
func wireDomains(_ context.Context, _ *app) error {
	return nil
}
