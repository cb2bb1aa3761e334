package idemstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hashgate/hashgate/internal/repo"
)

// Marker states.
const (
	statePending = "PENDING"
	stateDone    = "DONE"
	// schema 1 names, read as PENDING / DONE.
	stateV1Processing = "PROCESSING"
	stateV1Completed  = "COMPLETED"
)

// envelope is the marker's value. Schema 2 is current; schema 1, the previous shape, had no
// owner and no lease (states PROCESSING / COMPLETED): a v1 PROCESSING marker's lease is read as
// createdAtMs + the configured lease.
type envelope struct {
	SchemaVersion int     `json:"schemaVersion"`
	State         string  `json:"state"`
	Owner         string  `json:"owner,omitempty"`
	RequestHash   string  `json:"requestHash"`
	ResourceID    string  `json:"resourceId"`
	LeaseUntilMs  int64   `json:"leaseUntilMs,omitempty"`
	Status        int     `json:"status,omitempty"`
	Location      string  `json:"location,omitempty"`
	ETag          string  `json:"etag,omitempty"`
	Body          *string `json:"body,omitempty"`
	CreatedAtMs   int64   `json:"createdAtMs"`
	UpdatedAtMs   int64   `json:"updatedAtMs"`
}

func decodeEnvelope(raw string) (envelope, error) {
	var env envelope
	err := json.Unmarshal([]byte(raw), &env)
	return env, err
}

// read decodes and classifies a marker: found, old schema, or corrupt (refused).
func (r *Store) read(ctx context.Context, raw string) (envelope, repo.Outcome, error) {
	r.Metrics.Payload(ctx, "idempotency", len(raw))
	env, err := decodeEnvelope(raw)
	var bad []string
	if err != nil {
		bad = append(bad, "json")
	}
	outcome := repo.Found
	switch env.SchemaVersion {
	case repo.SchemaVersion:
	case repo.SchemaVersion - 1:
		outcome = repo.OldSchema
		switch env.State {
		case stateV1Processing:
			env.State = statePending
		case stateV1Completed:
			env.State = stateDone
		}
	default:
		bad = append(bad, "schemaVersion")
	}
	if env.RequestHash == "" {
		bad = append(bad, "requestHash")
	}
	switch env.State {
	case statePending:
	case stateDone:
		if env.Status < 200 || env.Status > 299 || env.Body == nil {
			bad = append(bad, "status|body")
		}
	default:
		bad = append(bad, "state")
	}
	if len(bad) > 0 {
		r.Metrics.Read(ctx, "idempotency", repo.Corrupt)
		r.Log.ErrorContext(ctx, "corrupt object", "key", "idem:{*}", "fields", bad)
		return env, repo.Corrupt, fmt.Errorf("%w: idempotency marker has missing or malformed fields %v", repo.ErrCorrupt, bad)
	}
	r.Metrics.Read(ctx, "idempotency", outcome)
	return env, outcome, nil
}

// leaseUntil is when the marker's in-flight lease passes (ms, server time).
func (r *Store) leaseUntil(env envelope, o repo.Outcome) int64 {
	if env.LeaseUntilMs > 0 {
		return env.LeaseUntilMs
	}
	if o == repo.OldSchema {
		return env.CreatedAtMs + r.lease.Milliseconds()
	}
	return 0
}
