package tokenstore

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/tokens"
)

// Creating a token: bounds, the issuer's lineage, and token_create.lua.

// validateToken checks the bounds of a new token; over-bound input is refused before any write.
func validateToken(t tokens.Token) error {
	var bad []string
	check := func(ok bool, name string) {
		if !ok {
			bad = append(bad, name)
		}
	}
	text := func(s string, maxBytes int, required bool) bool {
		return (!required || s != "") && len(s) <= maxBytes && utf8.ValidString(s) && !tokens.HasControl(s)
	}
	check(tokens.ValidID(t.ID), "id")
	check(text(t.Tenant, maxTenantBytes, true), "tenant")
	check(text(t.Subject, maxSubjectBytes, true), "subject")
	check(text(t.Type, maxTypeBytes, true), "tokenType")
	check(text(t.Description, maxDescBytes, false), "description")
	scope := strings.Join(t.Scopes, " ")
	check(len(t.Scopes) > 0 && len(scope) <= maxScopeBytes && !strings.ContainsAny(scope, "\t\r\n"), "scopes")
	check(!t.ExpiresAt.IsZero() && t.ExpiresAt.After(t.IssuedAt), "expiresAt")
	if len(bad) > 0 {
		return apperr.Newf(apperr.BoundExceeded, "Token fields out of bounds: %s.", strings.Join(bad, ", "))
	}
	return nil
}

// Create writes a token in one script: the tenant index entry, the metadata hash with a key
// TTL of expiry − now + the safety window and, when t.ParentID is set, the link to its issuer
// (the issuer's children set and the root's lineage count). The issuer must be live, of the
// same tenant, and expire no earlier than t (tokens.ErrIssuerGone, tokens.ErrOutlivesIssuer).
func (r *Store) Create(ctx context.Context, t tokens.Token) error {
	if err := validateToken(t); err != nil {
		return err
	}
	tag := r.tag(t.Tenant)
	expMs := t.ExpiresAt.UnixMilli()
	keys := append(r.indexKeys(tag), r.hashKey(tag, t.ID), r.Keys.EventStream(tag))
	args := []string{t.ID, repo.FormatMs(expMs), repo.FormatMs(r.safetyWindow.Milliseconds()), strconv.Itoa(r.maxPerTenant), strconv.Itoa(pruneMax), t.Tenant, "", "",
		events.Envelope(ctx, t.Tenant, r.retention)}
	fields := []string{"tenantId", t.Tenant, "subject", t.Subject, "tokenType", t.Type,
		"scopes", strings.Join(t.Scopes, " "), "description", t.Description,
		"issuedAtMs", repo.FormatMs(t.IssuedAt.UnixMilli()), "expiresAtMs", repo.FormatMs(expMs),
		"revoked", "0", "revokedAtMs", "0", "revokedReason", "",
		"schemaVersion", strconv.Itoa(repo.SchemaVersion)}
	if t.ParentID != "" {
		parentRoot, parentAnc, err := r.lineage(ctx, tag, t.Tenant, t.ParentID)
		if err != nil {
			return err
		}
		depth := len(parentAnc)
		if depth+1 > tokens.MaxDepth {
			r.Metrics.Transition(ctx, tokenObj, "create", "lineage_full")
			return fmt.Errorf("token %s: %d generations below its root: %w", t.ID, depth+1, tokens.ErrLineageFull)
		}
		root := parentRoot
		if root == "" {
			root = t.ParentID
		}
		keys = append(keys, r.hashKey(tag, t.ParentID), r.kidsKey(tag, t.ParentID), r.hashKey(tag, root))
		args[6], args[7] = strconv.Itoa(r.maxLineage), parentRoot
		fields = append(fields, "parentId", t.ParentID, "rootId", root, "depth", strconv.Itoa(depth+1),
			"ancestors", strings.Join(append(parentAnc, t.ParentID), " "))
	}
	rep, err := repo.RunScript(ctx, r.Client, r.Metrics, "token_create", "token create", scriptCreate, keys, append(args, fields...))
	if err != nil {
		return err
	}
	switch rep.Code() {
	case repo.CodeOK: // {'OK', hash TTL in ms}
		ttl, err := rep.Int(0)
		if err = cmp.Or(rep.Want(1), err); err != nil || ttl <= 0 {
			return r.badReply(ctx, "token_create", cmp.Or(err, rep.Unexpected()))
		}
		r.Metrics.Transition(ctx, tokenObj, "create", "ok")
		r.auditEvent(ctx, events.TokenIssued, t.Tenant, t.ID)
		return nil
	case repo.CodeQuota: // {'QUOTA', ms until the earliest live token expires}
		ms, err := rep.Int(0)
		if err = cmp.Or(rep.Want(1), err); err != nil {
			return r.badReply(ctx, "token_create", err)
		}
		r.Metrics.Transition(ctx, tokenObj, "create", "index_full")
		return repo.QuotaError("tokens", "GATEWAY_TENANT_MAX_TOKENS", r.maxPerTenant, ms)
	case repo.CodeBound: // {'BOUND', 'lineage'}
		which, err := rep.Str(0)
		switch {
		case rep.Want(1) == nil && err == nil && which == "lineage":
			r.Metrics.Transition(ctx, tokenObj, "create", "lineage_full")
			return fmt.Errorf("token %s: %w", t.ID, tokens.ErrLineageFull)
		}
		return r.badReply(ctx, "token_create", cmp.Or(err, rep.Unexpected()))
	case repo.CodeIssuerGone: // {'ISSUER_GONE', 'not_live' | 'lineage_changed'}
		why, err := rep.Str(0)
		if err = cmp.Or(rep.Want(1), err); err != nil || why != "not_live" && why != "lineage_changed" {
			return r.badReply(ctx, "token_create", cmp.Or(err, rep.Unexpected()))
		}
		r.Metrics.Transition(ctx, tokenObj, "create", "issuer_gone")
		return fmt.Errorf("token %s issuer %s: %w", t.ID, t.ParentID, tokens.ErrIssuerGone)
	case repo.CodeExists, repo.CodeExpired, repo.CodeOutlivesIssuer: // no payload
		if err := rep.Want(0); err != nil {
			return r.badReply(ctx, "token_create", err)
		}
		return fmt.Errorf("token %s: %w", t.ID, createRefusals[rep.Code()])
	}
	return r.badReply(ctx, "token_create", rep.Unexpected())
}

// createRefusals are the create script's refusals without a payload.
var createRefusals = map[repo.Code]error{
	repo.CodeExists:         tokens.ErrExists,
	repo.CodeExpired:        tokens.ErrExpired,
	repo.CodeOutlivesIssuer: tokens.ErrOutlivesIssuer,
}

// lineage reads an issuer's rootId ("" when it is a root) and ancestors (root first; depth of
// them, none for a root).
func (r *Store) lineage(ctx context.Context, tag, tenant, id string) (string, []string, error) {
	if !tokens.ValidID(id) {
		return "", nil, fmt.Errorf("issuer: %w", tokens.ErrIssuerGone)
	}
	vals, err := r.Client.Do(ctx, r.Client.B().Hmget().Key(r.hashKey(tag, id)).Field("tenantId", "rootId", "depth", "ancestors").Build()).ToArray()
	if err != nil {
		return "", nil, repo.CommandError("token lineage", err)
	}
	if len(vals) != 4 {
		return "", nil, fmt.Errorf("token lineage: %d values for 4 fields", len(vals))
	}
	if tn, err := vals[0].ToString(); err != nil || tn != tenant {
		return "", nil, fmt.Errorf("issuer %s: %w", id, tokens.ErrIssuerGone)
	}
	root, _ := vals[1].ToString()
	depth := 0
	if d, err := vals[2].ToString(); err == nil {
		if depth, err = strconv.Atoi(d); err != nil || depth < 1 {
			return "", nil, fmt.Errorf("%w: token %s has a bad depth", repo.ErrCorrupt, id)
		}
	}
	anc, _ := vals[3].ToString()
	ancestors := strings.Fields(anc)
	if !validLineage(root, depth, ancestors) {
		return "", nil, fmt.Errorf("%w: token %s has an inconsistent lineage", repo.ErrCorrupt, id)
	}
	return root, ancestors, nil
}

// validLineage reports whether a token's rootId, depth and ancestors agree: a root has none of
// them; a minted token has depth ancestors, well-formed ids, the first its root.
func validLineage(root string, depth int, ancestors []string) bool {
	if root == "" {
		return depth == 0 && len(ancestors) == 0
	}
	if depth < 1 || len(ancestors) != depth || ancestors[0] != root {
		return false
	}
	for _, a := range ancestors {
		if !tokens.ValidID(a) {
			return false
		}
	}
	return true
}
