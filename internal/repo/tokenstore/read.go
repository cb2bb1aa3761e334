package tokenstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/tokens"
)

// Reading tokens: the full metadata (Get, List) and the per-request state (State).

// Get reads a token of tenant. A token of another tenant is NotFound, like an unknown one.
func (r *Store) Get(ctx context.Context, tenant, id string) (tokens.Token, error) {
	if !tokens.ValidID(id) {
		return tokens.Token{}, fmt.Errorf("token: %w", apperr.NotFound)
	}
	m, err := r.Client.Do(ctx, r.Client.B().Hgetall().Key(r.hashKey(r.tag(tenant), id)).Build()).AsStrMap()
	if err != nil {
		return tokens.Token{}, repo.CommandError("token get", err)
	}
	t, err := r.decode(ctx, id, m)
	if err != nil {
		return tokens.Token{}, err
	}
	if t.Tenant != tenant {
		return tokens.Token{}, fmt.Errorf("token %s: %w", id, apperr.NotFound)
	}
	return t, nil
}

// decode classifies and decodes a token hash read with HGETALL.
func (r *Store) decode(ctx context.Context, id string, m map[string]string) (tokens.Token, error) {
	if len(m) == 0 {
		r.Metrics.Read(ctx, tokenObj, repo.Missing)
		return tokens.Token{}, fmt.Errorf("token %s: %w", id, apperr.NotFound)
	}
	r.Metrics.Payload(ctx, tokenObj, repo.PayloadBytes(m))
	f := repo.NewFields(m)
	t := tokens.Token{
		ID:            id,
		Tenant:        f.Str("tenantId"),
		Subject:       f.Str("subject"),
		Type:          f.Str("tokenType"),
		Scopes:        strings.Fields(f.Str("scopes")),
		Description:   f.Opt("description"),
		IssuedAt:      time.UnixMilli(f.Int64("issuedAtMs")),
		ExpiresAt:     time.UnixMilli(f.Int64("expiresAtMs")),
		RevokedReason: f.Opt("revokedReason"),
		ParentID:      f.Opt("parentId"),
		RootID:        f.Opt("rootId"),
		Depth:         int(f.OptInt64("depth")),
		Ancestors:     strings.Fields(f.Opt("ancestors")),
		CreatedAt:     time.UnixMilli(f.Int64("createdAtMs")),
		UpdatedAt:     time.UnixMilli(f.Int64("updatedAtMs")),
	}
	switch f.Str("revoked") {
	case "1":
		t.Revoked = true
		t.RevokedAt = time.UnixMilli(f.OptInt64("revokedAtMs"))
	case "0", "":
	default:
		f.Bad("revoked")
	}
	if !validLineage(t.RootID, t.Depth, t.Ancestors) {
		f.Bad("ancestors")
	}
	o := f.Schema()
	if o == repo.Corrupt {
		return tokens.Token{}, r.corrupt(ctx, id, f)
	}
	r.Metrics.Read(ctx, tokenObj, o)
	return t, nil
}

// stateFields are the only fields the per-request check reads (never HGETALL).
var stateFields = []string{"revoked", "expiresAtMs", "tenantId", "scopes", "schemaVersion"}

// State reads what the per-request check needs with one HMGET of tenant's token id (the
// tenant comes from the verified JWT, so another tenant's id is simply not found). With cacheTTL > 0 it goes
// through rueidis client-side caching: a hot token costs no round trip, and a write to its
// hash (a revocation) invalidates every replica's copy through Redis's tracking push; cacheTTL
// caps staleness should a push be lost. A missing hash is NotFound; a malformed one repo.ErrCorrupt;
// a read that could not complete (Redis unreachable, the connection lost) an error
// wrapping storeerr.ErrUnavailable, never NotFound.
func (r *Store) State(ctx context.Context, tenant, id string, cacheTTL time.Duration) (tokens.State, error) {
	if !tokens.ValidID(id) {
		return tokens.State{}, fmt.Errorf("token: %w", apperr.NotFound)
	}
	read := func(key string) ([]rueidis.RedisMessage, bool, error) {
		cmd := r.Client.B().Hmget().Key(key).Field(stateFields...)
		var res rueidis.RedisResult
		if cacheTTL > 0 {
			res = r.Client.DoCache(ctx, cmd.Cache(), cacheTTL)
		} else {
			res = r.Client.Do(ctx, cmd.Build())
		}
		vals, err := res.ToArray()
		return vals, res.IsCacheHit(), err
	}
	key := r.hashKey(r.tag(tenant), id)
	vals, hit, err := read(key)
	if cacheTTL > 0 && errors.Is(err, rueidis.ErrDoCacheAborted) {
		// The connection dropped while another call fetched this key for the cache (a failover
		// resets every connection): ask once more, on the new connection, within ctx.
		vals, hit, err = read(key)
	}
	if err != nil {
		return tokens.State{}, repo.CommandError("token state", err)
	}
	st := tokens.State{CacheHit: hit}
	m, _, err := repo.PooledFields(vals, stateFields)
	if err != nil {
		return st, fmt.Errorf("token state: %w", err)
	}
	defer repo.ReleaseFields(m)
	if len(m) == 0 {
		r.Metrics.Read(ctx, tokenObj, repo.Missing)
		return st, fmt.Errorf("token %s: %w", id, apperr.NotFound)
	}
	f := repo.NewFields(m)
	switch m["revoked"] {
	case "1":
		st.Revoked = true
	case "0":
	default:
		f.Bad("revoked")
	}
	st.ExpiresAtMs, st.Tenant, st.Scope = f.Int64("expiresAtMs"), f.Str("tenantId"), f.Str("scopes")
	o := f.Schema()
	if o == repo.Corrupt {
		return tokens.State{}, r.corrupt(ctx, id, f)
	}
	r.Metrics.Read(ctx, tokenObj, o)
	return st, nil
}

// List returns up to limit of tenant's tokens, newest first, strictly older than cursor (a
// token id; "" for the first page), and the cursor of the next page ("" on the last page).
// Expired index members are pruned as the index is read. Ids whose hash is gone (expired, or
// a create that failed halfway) are skipped; the cursor still advances past them, so pages
// neither repeat nor skip a token.
func (r *Store) List(ctx context.Context, tenant, cursor string, limit int) ([]tokens.Token, string, error) {
	if err := pageArgs(cursor, limit); err != nil {
		return nil, "", err
	}
	tag := r.tag(tenant)
	rep, err := repo.RunScript(ctx, r.Client, r.Metrics, "token_list", "token list", scriptList, r.indexKeys(tag),
		[]string{cursor, strconv.Itoa(limit + 1), strconv.Itoa(pruneMax)})
	if err != nil {
		return nil, "", err
	}
	ids, err := rep.Strs(0) // {'OK', tokenId...}
	if err == nil && rep.Code() != repo.CodeOK {
		err = rep.Unexpected()
	}
	if err != nil {
		return nil, "", r.badReply(ctx, "token_list", err)
	}
	ids, next := pageCut(ids, limit)
	out, err := r.readPage(ctx, tenant, tag, ids)
	return out, next, err
}

// ListLineage is List restricted to the token id and the tokens minted below it (read from the
// children sets: at most tokens.MaxDepth round trips and tokens.MaxLineage ids), newest first,
// with the same cursor.
func (r *Store) ListLineage(ctx context.Context, tenant, id, cursor string, limit int) ([]tokens.Token, string, error) {
	if err := pageArgs(cursor, limit); err != nil {
		return nil, "", err
	}
	if !tokens.ValidID(id) {
		return nil, "", nil
	}
	tag := r.tag(tenant)
	desc, err := r.descendants(ctx, r.Client, tag, id)
	if err != nil {
		return nil, "", err
	}
	ids := append(desc, id)
	slices.SortFunc(ids, func(a, b string) int { return strings.Compare(b, a) }) // newest first
	if cursor != "" {
		ids = ids[sort.Search(len(ids), func(i int) bool { return ids[i] < cursor }):]
	}
	ids, next := pageCut(ids, limit)
	out, err := r.readPage(ctx, tenant, tag, ids)
	return out, next, err
}

// pageArgs checks a page's cursor (a token id, or "") and limit.
func pageArgs(cursor string, limit int) error {
	if cursor != "" && !tokens.ValidID(cursor) {
		return apperr.New(apperr.Validation, "The cursor is not one this gateway issued.")
	}
	if limit < 1 || limit > 1000 {
		return apperr.New(apperr.Validation, "The limit is out of range.")
	}
	return nil
}

// pageCut keeps the first limit of ids (read with one more) and returns the next page's cursor
// ("" when nothing is left).
func pageCut(ids []string, limit int) ([]string, string) {
	if len(ids) <= limit {
		return ids, ""
	}
	return ids[:limit], ids[limit-1]
}

// readPage reads the hashes of ids (in order) and decodes those of tenant; missing and corrupt ones are counted and skipped.
func (r *Store) readPage(ctx context.Context, tenant, tag string, ids []string) ([]tokens.Token, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	cmds := make(rueidis.Commands, 0, len(ids))
	for _, id := range ids {
		if !tokens.ValidID(id) {
			return nil, fmt.Errorf("%w: token index holds a malformed member", repo.ErrCorrupt)
		}
		cmds = append(cmds, r.Client.B().Hgetall().Key(r.hashKey(tag, id)).Build())
	}
	maps := make([]map[string]string, len(ids))
	var err error
	for i, res := range r.Client.DoMulti(ctx, cmds...) {
		if maps[i], err = res.AsStrMap(); err != nil {
			return nil, repo.CommandError("token list read", err)
		}
	}
	out := make([]tokens.Token, 0, len(ids))
	for i, m := range maps {
		if len(m) == 0 {
			r.Metrics.Read(ctx, tokenObj, repo.Missing)
			continue
		}
		t, err := r.decode(ctx, ids[i], m)
		if err != nil {
			// Corrupt entries are counted and logged by decode and never served.
			continue
		}
		if t.Tenant != tenant {
			continue
		}
		out = append(out, t)
	}
	return out, nil
}
