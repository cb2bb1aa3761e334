package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/hashgate/hashgate/internal/events"
)

// The SSE stream of GET /v1/events/stream: one loop per connection reading the tenant's
// stream after the last id sent, at most StreamBuffer events per read (the per-connection
// buffer bound), each write with its own deadline so a reader that stops reading is dropped
// (it resumes with Last-Event-ID), a comment line every KeepAlive, and the end of the
// response when the client goes, Redis fails, MaxDuration passes (the client reconnects) or
// the gateway stops (CloseStreams).

// EventStreamOptions bound the SSE connections (Deps.EventStream).
type EventStreamOptions struct {
	// KeepAlive is the interval of ": keep-alive" comments (GATEWAY_EVENTS_KEEPALIVE).
	KeepAlive time.Duration
	// Buffer bounds the events read and written at once per connection.
	Buffer int
	// WriteTimeout bounds each write to a connection.
	WriteTimeout time.Duration
	// MaxDuration bounds a connection's life: the stream then ends and the client reconnects
	// with its Last-Event-ID (spreading long-lived clients over the replicas).
	MaxDuration time.Duration
}

func (o EventStreamOptions) withDefaults() EventStreamOptions {
	if o.KeepAlive <= 0 {
		o.KeepAlive = 15 * time.Second
	}
	if o.Buffer <= 0 {
		o.Buffer = 64
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.MaxDuration <= 0 {
		o.MaxDuration = 10 * time.Minute
	}
	return o
}

// pollBlock is how long one read of the stream waits for new events.
const pollBlock = time.Second

type eventStream struct {
	s      *Server
	ctx    context.Context
	tenant string
	filter events.Filter
	after  string
}

func (e *eventStream) VisitStreamEventsResponse(w http.ResponseWriter) error {
	o := e.s.EventStream.withDefaults()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: pass events through unbuffered
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(o.WriteTimeout))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write([]byte(": stream of " + e.after + "\n\n")) {
		return nil
	}
	var buf bytes.Buffer
	lastWrite := time.Now()
	end := time.After(o.MaxDuration)
	for {
		select {
		case <-e.ctx.Done():
			return nil
		case <-end:
			return nil
		case <-e.s.streamsDone():
			write([]byte("event: shutdown\ndata: {}\n\n"))
			return nil
		default:
		}
		batch, next, err := e.s.Events.Next(e.ctx, e.tenant, e.filter, e.after, o.Buffer, min(pollBlock, o.KeepAlive))
		if err != nil {
			// Redis trouble: end the stream; the client resumes from its last id.
			e.s.Logger.WarnContext(e.ctx, "event stream ended", "err", err)
			return nil
		}
		e.after = next
		buf.Reset()
		for _, ev := range batch {
			body, err := json.Marshal(eventBody(ev))
			if err != nil {
				return nil
			}
			buf.WriteString("id: " + ev.ID + "\nevent: " + string(ev.Type) + "\ndata: ")
			buf.Write(body)
			buf.WriteString("\n\n")
		}
		if buf.Len() == 0 && time.Since(lastWrite) >= o.KeepAlive {
			buf.WriteString(": keep-alive\n\n")
		}
		if buf.Len() > 0 {
			if !write(buf.Bytes()) {
				return nil
			}
			lastWrite = time.Now()
		}
	}
}
