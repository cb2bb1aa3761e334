package apperr

import (
	"errors"
	"fmt"
	"testing"
)

func TestIsAndAs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		err    error
		kind   *Kind
		detail string
	}{
		{"error", New(NotFound, "quote q_1"), NotFound, "quote q_1"},
		{"wrapped error", fmt.Errorf("get: %w", Newf(Conflict, "status %s", "SUBMITTED")), Conflict, "status SUBMITTED"},
		{"bare kind", fmt.Errorf("token x: %w", NotFound), NotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if !errors.Is(tt.err, tt.kind) {
				t.Fatalf("errors.Is(%v, %v) = false", tt.err, tt.kind)
			}
			if errors.Is(tt.err, Internal) {
				t.Fatalf("errors.Is(%v, Internal) = true", tt.err)
			}
			got, ok := As(tt.err)
			if !ok || got.Kind != tt.kind || got.Detail != tt.detail {
				t.Fatalf("As = %+v, %v", got, ok)
			}
		})
	}
	if _, ok := As(errors.New("boom")); ok {
		t.Fatal("As(plain error) = true")
	}
}

func TestSlugsUnique(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, k := range []*Kind{Validation, Unauthenticated, InvalidCredentials, InsufficientScope, StepUpRequired,
		NotFound, MethodNotAllowed, Conflict, InvalidStatus, MaxEscalation, InFlight, Gone, PreconditionFailed,
		PayloadTooLarge, UnsupportedMediaType, Unprocessable, BoundExceeded, WrongCode, IdempotencyMismatch,
		PreconditionRequired, RateLimited, Internal, Unavailable,
		MalformedRequest, ExpectationFailed, HeaderTooLarge, UnsupportedTransferCoding, HTTPVersionNotSupported} {
		if seen[k.Slug] {
			t.Fatalf("duplicate slug %q", k.Slug)
		}
		seen[k.Slug] = true
		if k.Status < 400 || k.Status > 599 || k.Title == "" {
			t.Fatalf("bad kind %+v", k)
		}
	}
}
