package tokenstore

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/store/storeerr"
	"github.com/hashgate/hashgate/internal/tokens"
)

// Revoking a token with its descendants (token_revoke.lua).

// Revoke revokes a token of tenant and every token minted from it, transitively, in one
// script (idempotent). It returns what happened to the token itself and the ids of the
// descendants revoked now. Unknown ids, another tenant's included, are a no-op
// (tokens.RevokeUnknown) that writes nothing. The descendants are read first, level by level
// (at most tokens.MaxDepth round trips, at most tokens.MaxLineage ids), and the script refuses
// ('RETRY') when a token was minted under them meanwhile; the read is then repeated.
func (r *Store) Revoke(ctx context.Context, tenant, id, reason string) (tokens.RevokeResult, []string, error) {
	if !tokens.ValidID(id) {
		return tokens.RevokeUnknown, nil, nil
	}
	if len(reason) > maxReasonBytes || !utf8.ValidString(reason) || tokens.HasControl(reason) {
		return tokens.RevokeUnknown, nil, apperr.New(apperr.Validation, "The revocation reason is too long or has control characters.")
	}
	tag := r.tag(tenant)
	var (
		res     tokens.RevokeResult
		revoked []string
	)
	err := r.durable.Run(ctx, r.Client, func(c rueidis.Client) (bool, error) {
		var err error
		res, revoked, err = r.revoke(ctx, c, tenant, tag, id, reason)
		switch {
		case err != nil:
			return false, err
		case res == tokens.Revoked:
			return true, nil
		case res == tokens.AlreadyRevoked: // maybe by an earlier attempt whose confirmation timed out
			return repo.DurableMarker(ctx, c, r.Keys, tag)
		}
		return false, nil
	})
	if err != nil {
		return tokens.RevokeUnknown, nil, err
	}
	r.Metrics.Transition(ctx, tokenObj, "revoke", res.String())
	if res == tokens.Revoked {
		for _, x := range append([]string{id}, revoked...) {
			r.auditEvent(ctx, events.TokenRevoked, tenant, x)
		}
	}
	return res, revoked, nil
}

// revoke is Revoke's optimistic loop on c.
func (r *Store) revoke(ctx context.Context, c rueidis.Client, tenant, tag, id, reason string) (tokens.RevokeResult, []string, error) {
	for range maxRevokeRetries {
		desc, err := r.descendants(ctx, c, tag, id)
		if err != nil {
			return tokens.RevokeUnknown, nil, err
		}
		keys := make([]string, 0, 2*len(desc)+3)
		keys = append(keys, r.hashKey(tag, id))
		for _, d := range desc {
			keys = append(keys, r.hashKey(tag, d))
		}
		keys = append(keys, r.kidsKey(tag, id))
		for _, d := range desc {
			keys = append(keys, r.kidsKey(tag, d))
		}
		keys = append(keys, r.Keys.EventStream(tag))
		args := append([]string{tenant, reason, "revoked with its issuer's lineage: ancestor " + id + " was revoked",
			events.Envelope(ctx, tenant, r.retention), id}, desc...)
		rep, err := repo.RunScript(ctx, c, r.Metrics, "token_revoke", "token revoke", scriptRevoke, keys, args)
		if err != nil {
			return tokens.RevokeUnknown, nil, err
		}
		// {'OK', descendant id...} | {'NOT_FOUND'} | {'ALREADY'} | {'RETRY'}
		revoked, err := rep.Strs(0)
		if err == nil && rep.Code() != repo.CodeOK {
			err = rep.Want(0)
		}
		if err != nil {
			return tokens.RevokeUnknown, nil, r.badReply(ctx, "token_revoke", err)
		}
		switch rep.Code() {
		case repo.CodeRetry:
			continue
		case repo.CodeNotFound:
			return tokens.RevokeUnknown, nil, nil
		case repo.CodeAlready:
			return tokens.AlreadyRevoked, revoked, nil
		case repo.CodeOK:
			return tokens.Revoked, revoked, nil
		default:
			return tokens.RevokeUnknown, nil, r.badReply(ctx, "token_revoke", rep.Unexpected())
		}
	}
	return tokens.RevokeUnknown, nil, fmt.Errorf("token revoke %s: tokens kept being minted under it: %w", id, storeerr.ErrUnavailable)
}

// descendants lists the ids minted from id, transitively, breadth first, from the children
// sets: at most tokens.MaxDepth levels and tokens.MaxLineage ids (the bounds a create enforces).
func (r *Store) descendants(ctx context.Context, c rueidis.Client, tag, id string) ([]string, error) {
	var out []string
	seen := map[string]bool{id: true}
	level := []string{id}
	for depth := 0; len(level) > 0; depth++ {
		if depth > tokens.MaxDepth || len(out) > tokens.MaxLineage {
			return nil, fmt.Errorf("%w: token %s has more descendants than a lineage may hold", repo.ErrCorrupt, id)
		}
		cmds := make(rueidis.Commands, 0, len(level))
		for _, l := range level {
			cmds = append(cmds, c.B().Smembers().Key(r.kidsKey(tag, l)).Build())
		}
		var next []string
		for _, res := range c.DoMulti(ctx, cmds...) {
			kids, err := res.AsStrSlice()
			if err != nil {
				return nil, repo.CommandError("token children", err)
			}
			for _, k := range kids {
				if !tokens.ValidID(k) {
					return nil, fmt.Errorf("%w: a token children set holds a malformed member", repo.ErrCorrupt)
				}
				if !seen[k] {
					seen[k] = true
					next = append(next, k)
				}
			}
		}
		out = append(out, next...)
		level = next
	}
	return out, nil
}
