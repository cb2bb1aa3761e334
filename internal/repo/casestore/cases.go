package casestore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/cases"
	"github.com/hashgate/hashgate/internal/page"
	"github.com/hashgate/hashgate/internal/repo"
)

// The replies of the scripts that create and index a case (each script's header shows them).
var (
	// case_create: {'OK'|'EXISTS', HGETALL case} | {'QUOTA', ms} | {'BOUND'} (due index full)
	createReplies = repo.ReplyShapes{repo.CodeOK: 1, repo.CodeExists: 1, repo.CodeQuota: 1, repo.CodeBound: 0}
	addReplies    = repo.ReplyShapes{repo.CodeOK: 0, repo.CodeBound: 0} // case_tenant_add, case_due_add
)

// Create opens a case: the tenant is registered for the sweepers first (a bounded global
// registry, refused with 422 when full), then one script in the tenant's slot counts the case
// in the tenant's quota (over it: 429 quota-exceeded, nothing written), puts it in the due index
// and the list indexes and writes it.
func (r *Store) Create(ctx context.Context, in cases.NewCase) (*cases.Case, error) {
	if in.ID == "" {
		in.ID = cases.NewID()
	}
	if err := r.checkNew(in); err != nil {
		return nil, err
	}
	tag := r.TenantTag(in.Tenant)
	if err := r.register(ctx, tag); err != nil {
		return nil, err
	}
	rep, err := r.writes.Script(ctx, "case_create", "case create", scriptCreate,
		append(append(append(r.caseKeys(tag, in.ID), r.dueKey(tag)), r.indexKeys(tag)...), r.Keys.EventStream(tag)),
		[]string{in.ID, in.Tenant, in.SubjectRef, in.AssignedTeam, repo.FormatMs(in.DueAt.UnixMilli()), in.Reason, in.Actor,
			repo.FormatMs(r.openTTL.Milliseconds()), strconv.Itoa(r.historyMax), strconv.Itoa(repo.SchemaVersion),
			strconv.Itoa(r.objects.Quota.Limit), strconv.Itoa(MaxDueCases), in.Assignee,
			r.indexTag("status", cases.Open), r.indexTag("level", "0"), r.indexTag("team", in.AssignedTeam),
			r.indexTag("assignee", in.Assignee), r.indexTag("subject", in.SubjectRef), r.envelope(ctx, in.Tenant)})
	if err != nil {
		return nil, err
	}
	if err := createReplies.Check(rep); err != nil {
		return nil, repo.BadReply(ctx, r.Metrics, "case_create", err)
	}
	if rep.Code() == repo.CodeBound {
		return nil, dueBoundError()
	}
	return r.objects.Created(ctx, "case_create", rep, in.Tenant, in.ID)
}

// Get returns the tenant's case, or NotFound (also for another tenant's case).
func (r *Store) Get(ctx context.Context, tenant, id string) (*cases.Case, error) {
	if !caseIDPattern.MatchString(id) {
		return nil, fmt.Errorf("case get: %w", apperr.NotFound)
	}
	return r.objects.Read(ctx, r.writes, r.caseKeys(r.TenantTag(tenant), id)[0], id)
}

// History lists at most n of the case's transitions, newest first, strictly older than the
// entry whose stream id is before ("" for the newest): a page of XREVRANGE, pipelined with
// the owner check (one round trip). Each event's Pos is its stream id, which a write never
// changes (the stream keeps at most the configured history max, trimming the oldest).
func (r *Store) History(ctx context.Context, tenant, id, before string, n int) ([]cases.Event, error) {
	if !caseIDPattern.MatchString(id) {
		return nil, fmt.Errorf("case history: %w", apperr.NotFound)
	}
	if before != "" && !isStreamID(before) {
		return nil, page.BadCursor("names no entry of this history")
	}
	entries, err := r.history(ctx, tenant, r.caseKeys(r.TenantTag(tenant), id), before, min(n, r.historyMax))
	if err != nil {
		return nil, err
	}
	out := make([]cases.Event, 0, len(entries))
	for _, e := range entries {
		ev, err := r.decodeEvent(ctx, e.FieldValues)
		if err != nil {
			return nil, err
		}
		ev.Pos = e.ID
		out = append(out, ev)
	}
	return out, nil
}

// isStreamID reports whether s is a stream entry id Redis accepts: ms-seq, each a uint64.
func isStreamID(s string) bool {
	ms, seq, ok := strings.Cut(s, "-")
	_, errMs := strconv.ParseUint(ms, 10, 64)
	_, errSeq := strconv.ParseUint(seq, 10, 64)
	return ok && errMs == nil && errSeq == nil
}

// history reads at most n entries of the history stream of the case whose hash and stream
// are keys[0] and keys[1], older than the entry before ("" for the newest first); NotFound
// when the hash is absent or another tenant's.
func (r *Store) history(ctx context.Context, tenant string, keys []string, before string, n int) ([]rueidis.XRangeEntry, error) {
	end := "+"
	if before != "" {
		end = "(" + before // exclusive (Redis 6.2+)
	}
	var res []rueidis.RedisResult
	err := r.writes.Read(ctx, keys[0], func(c rueidis.Client) error {
		res = c.DoMulti(ctx, c.B().Hget().Key(keys[0]).Field("tenantId").Build(),
			c.B().Xrevrange().Key(keys[1]).End(end).Start("-").Count(int64(max(n, 1))).Build())
		if err := res[0].Error(); err != nil && !rueidis.IsRedisNil(err) {
			return repo.CommandError("case history", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	owner, err := res[0].ToString()
	if err != nil {
		return nil, repo.CommandError("case history", err)
	}
	if owner != tenant {
		return nil, fmt.Errorf("case history: %w", apperr.NotFound)
	}
	entries, err := res[1].AsXRange()
	if err != nil {
		return nil, repo.CommandError("case history", err)
	}
	return entries, nil
}

// checkNew refuses what the keys and the case's lifetime cannot hold: a malformed id, no
// tenant, a due time beyond the open TTL (the case would expire before it is due). The field
// rules are the service's (cases.Service.Create).
func (r *Store) checkNew(in cases.NewCase) error {
	switch {
	case !caseIDPattern.MatchString(in.ID):
		return apperr.New(apperr.Validation, "The case id is malformed.")
	case in.Tenant == "":
		return apperr.New(apperr.Unauthenticated, "The caller has no tenant.")
	case in.DueAt.After(time.Now().Add(r.openTTL)):
		return apperr.Newf(apperr.Unprocessable, "dueAt must be within %s from now (a case lives that long while open).", r.openTTL)
	}
	return nil
}

// register puts the tenant tag in the sweepers' registry.
func (r *Store) register(ctx context.Context, tag string) error {
	ttl := r.openTTL + tenantRegistryMargin
	err := r.add(ctx, "case_tenant_add", "case tenant register", scriptTenantAdd, r.registryKey(),
		[]string{tag, repo.FormatMs(ttl.Milliseconds()), strconv.Itoa(MaxTenants)})
	if errors.Is(err, errFull) {
		return apperr.Newf(apperr.BoundExceeded, "The gateway tracks cases for at most %d tenants.", MaxTenants)
	}
	return err
}

// index puts the case in its tenant's due index.
func (r *Store) index(ctx context.Context, tag, id string, due time.Time) error {
	err := r.add(ctx, "case_due_add", "case due index", scriptDueAdd, r.dueKey(tag),
		[]string{id, repo.FormatMs(due.UnixMilli()), repo.FormatMs(r.openTTL.Milliseconds()), strconv.Itoa(MaxDueCases)})
	if errors.Is(err, errFull) {
		return dueBoundError()
	}
	return err
}

// errFull is add's answer for {'BOUND'}: the set is at its bound.
var errFull = errors.New("the set is full")

// add runs a script that adds one member to a bounded set: {'OK'} | {'BOUND'} (errFull).
func (r *Store) add(ctx context.Context, name, op string, l *rueidis.Lua, key string, args []string) error {
	rep, err := r.writes.Script(ctx, name, op, l, []string{key}, args)
	if err != nil {
		return err
	}
	if err := addReplies.Check(rep); err != nil {
		return repo.BadReply(ctx, r.Metrics, name, err)
	}
	if rep.Code() == repo.CodeBound {
		return errFull
	}
	return nil
}

// dueBoundError refuses a case its tenant's full due index cannot take.
func dueBoundError() error {
	return apperr.Newf(apperr.BoundExceeded, "A tenant has at most %d cases awaiting their due time.", MaxDueCases)
}
