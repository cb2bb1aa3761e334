package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/hashgate/hashgate/internal/idempotency"
)

// createdResponse is a 201 written from stored bytes, so a replay is byte-identical to the
// first response. It serves both idempotent creates.
type createdResponse idempotency.Result

func (r createdResponse) VisitCreateQuoteResponse(w http.ResponseWriter) error { return r.write(w) }
func (r createdResponse) VisitCreateCaseResponse(w http.ResponseWriter) error  { return r.write(w) }

func (r createdResponse) write(w http.ResponseWriter) error {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if r.Location != "" {
		h.Set("Location", r.Location)
	}
	if r.ETag != "" {
		h.Set("ETag", r.ETag)
	}
	if r.Replayed {
		h.Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(r.Status)
	_, err := w.Write(r.Body)
	return err
}

// createdJSON renders a 201 body once, as the bytes every replay will repeat.
func createdJSON(location string, version int64, body any) (idempotency.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return idempotency.Response{}, fmt.Errorf("render created: %w", err)
	}
	return idempotency.Response{Status: http.StatusCreated, Body: append(b, '\n'), Location: location, ETag: *etagOf(version)}, nil
}
