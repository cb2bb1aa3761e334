package events

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// Origin is who and what caused a change: the event's actor, request id and trace id. The
// HTTP layer puts it on the request context once the caller is authenticated; a store reads it
// when it writes an event (a change without one, a background loop's, is the system's).
type Origin struct {
	Actor     string
	RequestID string
}

// ActorSystem is the actor of changes no caller made (sweepers, expiry).
const ActorSystem = "system"

type originKey struct{}

// WithOrigin returns a copy of ctx carrying o.
func WithOrigin(ctx context.Context, o Origin) context.Context {
	return context.WithValue(ctx, originKey{}, o)
}

// OriginFrom returns the origin on ctx, the actor "system" when none, and the trace id of the
// span on ctx ("" when none).
func OriginFrom(ctx context.Context) (o Origin, traceID string) {
	o, _ = ctx.Value(originKey{}).(Origin)
	if o.Actor == "" {
		o.Actor = ActorSystem
	}
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		traceID = sc.TraceID().String()
	}
	return o, traceID
}

// TokenActor and SessionActor name a caller as an actor.
func TokenActor(tokenID string) string     { return "token:" + tokenID }
func SessionActor(sessionID string) string { return "session:" + sessionID }
