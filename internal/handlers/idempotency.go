package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/repo"
)

// Idempotency stores Idempotency-Key claims and the responses they produced
// (*repo.Idempotency implements it).
type Idempotency interface {
	Claim(ctx context.Context, sc repo.IdemScope, requestHash, resourceID string) (*repo.IdemClaim, error)
	Complete(ctx context.Context, cl *repo.IdemClaim, resp repo.IdemResponse) error
	Release(ctx context.Context, cl *repo.IdemClaim) error
}

// createdResponse is a 201 written from stored bytes, so a replay is byte-identical to the
// first response. It serves both idempotent creates.
type createdResponse struct {
	repo.IdemResponse
	replayed bool
}

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
	if r.replayed {
		h.Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(r.Status)
	_, err := w.Write(r.Body)
	return err
}

// createOnce runs create at most once per Idempotency-Key. Without a key it just creates with
// newID. With one it claims the key (tenant + operation + SHA-256 of the key) for a hash of
// the canonical request; a completed key replays the stored response, a key in flight is 409,
// a key used with another request is 422. A refused or failed create releases the claim; a
// successful one stores its response (status, body, Location, ETag) under the key.
func (s *Server) createOnce(ctx context.Context, idem Idempotency, op, tenant string, key *string, request any, newID string,
	create func(id string) (repo.IdemResponse, error)) (*createdResponse, error) {
	if key == nil {
		resp, err := create(newID)
		return &createdResponse{IdemResponse: resp}, err
	}
	canonical, err := json.Marshal(request)
	if err != nil {
		return nil, fmt.Errorf("%s: canonical request: %w", op, err)
	}
	cl, err := idem.Claim(ctx, repo.IdemScope{Tenant: tenant, Operation: op, Key: *key}, repo.RequestHash(op, canonical), newID)
	if err != nil {
		return nil, err
	}
	if cl.Replay != nil {
		return &createdResponse{IdemResponse: *cl.Replay, replayed: true}, nil
	}
	resp, err := create(cl.ResourceID)
	if err != nil {
		if rerr := idem.Release(context.WithoutCancel(ctx), cl); rerr != nil {
			s.Logger.WarnContext(ctx, "idempotency release failed; the key frees itself when its lease passes", "op", op, "err", rerr)
		}
		return nil, err
	}
	if err := idem.Complete(context.WithoutCancel(ctx), cl, resp); err != nil {
		s.Logger.WarnContext(ctx, "idempotency completion failed; a retry after the lease recovers the same resource", "op", op, "err", err)
	}
	return &createdResponse{IdemResponse: resp}, nil
}

// createdJSON renders a 201 body once, as the bytes every replay will repeat.
func createdJSON(location string, version int64, body any) (repo.IdemResponse, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return repo.IdemResponse{}, fmt.Errorf("render created: %w", err)
	}
	return repo.IdemResponse{Status: http.StatusCreated, Body: append(b, '\n'), Location: location, ETag: *etagOf(version)}, nil
}

// callerPrincipal is the authenticated caller, who must belong to a tenant.
func callerPrincipal(ctx context.Context) (*auth.Principal, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok || p.Tenant == "" {
		return nil, apperr.New(apperr.Unauthenticated, "The credentials carry no tenant.")
	}
	return p, nil
}

// etagOf is the strong entity tag of a stateVersion: "3".
func etagOf(version int64) *string {
	v := `"` + strconv.FormatInt(version, 10) + `"`
	return &v
}

// ifMatchVersion reads an If-Match header as the stateVersion the caller last saw.
//   - absent: 428 when required, else -1 (no condition);
//   - "*": 428 when required (it would not protect against lost updates), else -1;
//   - not one entity tag (no quotes, a list, stray characters): 400;
//   - a well-formed tag this gateway never issues (W/"3", "abc", "0"): it cannot match, 412.
func ifMatchVersion(h *string, required bool) (int64, error) {
	v := ""
	if h != nil {
		v = strings.TrimSpace(*h)
	}
	if v == "" || v == "*" {
		if required {
			return 0, apperr.New(apperr.PreconditionRequired, `Send If-Match with the ETag you last read, e.g. If-Match: "3".`)
		}
		return -1, nil
	}
	weak := strings.HasPrefix(v, "W/")
	tag := strings.TrimPrefix(v, "W/")
	if len(tag) < 2 || tag[0] != '"' || tag[len(tag)-1] != '"' || !etagChars(tag[1:len(tag)-1]) {
		return 0, &apperr.Error{Kind: apperr.Validation, Detail: `If-Match must be one entity tag, e.g. "3".`,
			Fields: []apperr.FieldError{{Parameter: "header:If-Match", Detail: "not an entity tag"}}}
	}
	inner := tag[1 : len(tag)-1]
	n, err := strconv.ParseInt(inner, 10, 64)
	if weak || err != nil || n < 1 || strconv.FormatInt(n, 10) != inner {
		return 0, apperr.New(apperr.PreconditionFailed, "The If-Match ETag does not match the current version.")
	}
	return n, nil
}

// etagChars reports whether s holds only etagc characters (RFC 9110: %x21 / %x23-7E).
func etagChars(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c == '"' || c > 0x7e {
			return false
		}
	}
	return true
}

// noStore is the Cache-Control of every answer that carries a token or a code.
var noStore = "no-store"

// deref is *p, or the zero value for nil.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func notWired(what string) error {
	return apperr.Newf(apperr.NotImplemented, "%s are not configured on this gateway.", what)
}
