package repo

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/cases"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/store"
)

// Bounds and defaults of cases.
const (
	DefaultCaseMaxEscalation = 3
	DefaultCaseOpenTTL       = 90 * 24 * time.Hour
	DefaultCaseResolvedTTL   = 30 * 24 * time.Hour
	DefaultCaseHistoryMax    = 100
	DefaultCasesPerTenant    = 50000
	// MaxCasesPerTenant bounds GATEWAY_TENANT_MAX_CASES (the set's declared bound; a tenant's
	// due index holds at most as many, MaxDueCases).
	MaxCasesPerTenant = MaxDueCases
	// MaxDueCases bounds one tenant's due index (its open cases with a due time).
	MaxDueCases = 100_000
	// MaxCaseTenants bounds the registry of tenants the sweepers visit.
	MaxCaseTenants = 10_000
	// tenantRegistryMargin keeps a tenant registered a little longer than its due index lives.
	tenantRegistryMargin = time.Hour
)

// caseIDPattern guards the keys: a case id reaches a key only in this shape.
var caseIDPattern = regexp.MustCompile(`^c_[0-9a-hjkmnp-tv-z]{26}$`)

// CaseOptions configure Cases.
type CaseOptions struct {
	Prefix        string
	Hasher        *keyhash.Hasher
	MaxEscalation int           // default 3
	OpenTTL       time.Duration // TTL while not resolved, refreshed on each transition; default 90 days
	ResolvedTTL   time.Duration // TTL after resolution; default 30 days
	HistoryMax    int           // history stream MAXLEN; default 100
	// MaxPerTenant caps a tenant's live cases (GATEWAY_TENANT_MAX_CASES); default
	// DefaultCasesPerTenant, at most MaxCasesPerTenant.
	MaxPerTenant int
	Metrics      *Metrics
	Logger       *slog.Logger
}

// Cases keeps escalation cases: a hash and a bounded history stream under the tenant's tag,
// with the tenant's quota set of live cases and its due index in the same slot (caseKeys); a
// small registry of tenants for the sweepers. It implements cases.Store and cases.DueStore; the case rules are the service's (internal/cases),
// the bounds the keys and scripts need are kept here.
type Cases struct {
	c    rueidis.Client
	keys Keys
	h    *keyhash.Hasher
	o    CaseOptions
	m    *Metrics
	log  *slog.Logger
}

var (
	_ cases.Store    = (*Cases)(nil)
	_ cases.DueStore = (*Cases)(nil)
)

// NewCases returns the case repository on s.
func NewCases(s *store.Store, o CaseOptions) (*Cases, error) {
	o.MaxEscalation = cmp0(o.MaxEscalation, DefaultCaseMaxEscalation)
	o.OpenTTL = cmp0(o.OpenTTL, DefaultCaseOpenTTL)
	o.ResolvedTTL = cmp0(o.ResolvedTTL, DefaultCaseResolvedTTL)
	o.HistoryMax = cmp0(o.HistoryMax, DefaultCaseHistoryMax)
	o.MaxPerTenant = cmp0(o.MaxPerTenant, DefaultCasesPerTenant)
	switch {
	case s == nil || s.Client == nil:
		return nil, fmt.Errorf("%w: cases need a store", ErrBadOptions)
	case o.Prefix == "" || o.Hasher == nil:
		return nil, fmt.Errorf("%w: cases need a key prefix and a hasher", ErrBadOptions)
	case o.MaxEscalation < 1 || o.MaxEscalation > 100:
		return nil, fmt.Errorf("%w: case max escalation %d not within 1..100", ErrBadOptions, o.MaxEscalation)
	case o.OpenTTL < time.Second || o.ResolvedTTL < time.Second:
		return nil, fmt.Errorf("%w: case TTLs must be at least 1s", ErrBadOptions)
	case o.HistoryMax < 1 || o.HistoryMax > 10_000:
		return nil, fmt.Errorf("%w: case history max %d not within 1..10000", ErrBadOptions, o.HistoryMax)
	case o.MaxPerTenant < 1 || o.MaxPerTenant > MaxCasesPerTenant:
		return nil, fmt.Errorf("%w: cases per tenant %d not within 1..%d", ErrBadOptions, o.MaxPerTenant, MaxCasesPerTenant)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Cases{c: s.Client, keys: Keys{Prefix: o.Prefix}, h: o.Hasher, o: o, m: o.Metrics, log: o.Logger}, nil
}

func cmp0[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// The keys of a case: its hash, its history and its tenant's quota set, all under the
// tenant's tag (as its due index is), so one script creates or moves a case and counts it
// exactly (GATEWAY_TENANT_MAX_CASES). Another tenant's id names a key that does not exist.
func (r *Cases) caseKeys(tenantTag, id string) []string {
	h := r.keys.Key("case", tenantTag, id)
	return []string{h, h + ":history", r.keys.Key("quota", tenantTag, "cases")}
}

func (r *Cases) dueKey(tenantTag string) string {
	return r.keys.Key("casedue", tenantTag)
}
func (r *Cases) registryKey() string { return r.keys.Key("casetenants", "all") }

// TenantTag is the opaque tag naming tenant's due index (never the raw tenant id).
func (r *Cases) TenantTag(tenant string) string { return r.h.TenantTag(tenant) }

var (
	scriptCaseCreate     = script("case_create")
	scriptCaseTransition = script("case_transition")
	scriptCaseAuto       = script("case_auto_escalate")
	scriptCaseDueAdd     = script("case_due_add")
	scriptCaseTenant     = script("case_tenant_add")
	scriptCaseTenants    = script("case_tenants")
)

// The replies of the case scripts (each script's header shows them).
var (
	// case_create: {'OK'|'EXISTS', HGETALL case} | {'QUOTA', ms} | {'BOUND'} (due index full)
	caseCreateReplies = ReplyShapes{CodeOK: 1, CodeExists: 1, CodeQuota: 1, CodeBound: 0}
	caseAddReplies    = ReplyShapes{CodeOK: 0, CodeBound: 0} // case_tenant_add, case_due_add
	// case_transition: {'OK', HGETALL case} or a refusal.
	caseTransitionReplies = ReplyShapes{
		CodeOK: 1, CodeNotFound: 0, CodeStale: 1, CodeInvalidStatus: 1, CodeMaxEscalation: 1, CodeCorrupt: 1,
	}
	// case_auto_escalate: {'OK', HGETALL case} or why the sweeper's escalation did not happen.
	caseAutoReplies = ReplyShapes{
		CodeOK: 1, CodeGone: 0, CodeNotOpen: 1, CodeAlready: 0, CodeNotDue: 1, CodeMaxEscalation: 1, CodeCorrupt: 1,
	}
)

// Create opens a case: the tenant is registered for the sweepers first (a bounded global
// registry, refused with 422 when full), then one script in the tenant's slot counts the case
// in the tenant's quota (over it: 429 quota-exceeded, nothing written), puts it in the due index
// and writes it.
func (r *Cases) Create(ctx context.Context, in cases.NewCase) (*cases.Case, error) {
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
	rep, err := RunScript(ctx, r.c, r.m, "case_create", "case create", scriptCaseCreate,
		append(r.caseKeys(tag, in.ID), r.dueKey(tag)),
		[]string{in.ID, in.Tenant, in.SubjectRef, in.AssignedTeam, FormatMs(in.DueAt.UnixMilli()), in.Reason, in.Actor,
			FormatMs(r.o.OpenTTL.Milliseconds()), strconv.Itoa(r.o.HistoryMax), strconv.Itoa(SchemaVersion),
			strconv.Itoa(r.o.MaxPerTenant), strconv.Itoa(MaxDueCases)})
	if err != nil {
		return nil, err
	}
	if err := caseCreateReplies.Check(rep); err != nil {
		return nil, BadReply(ctx, r.m, "case_create", err)
	}
	switch rep.Code() {
	case CodeQuota: // {'QUOTA', ms until the earliest live case expires}
		wait, err := rep.Int(0)
		if err != nil {
			return nil, BadReply(ctx, r.m, "case_create", err)
		}
		r.m.Transition(ctx, "case", "create", "quota")
		return nil, QuotaError("cases", "GATEWAY_TENANT_MAX_CASES", r.o.MaxPerTenant, wait)
	case CodeBound:
		return nil, dueBoundError()
	}
	c, err := r.decodeReply(ctx, "case_create", rep, in.ID)
	if err != nil {
		return nil, err
	}
	if c.Tenant != in.Tenant {
		return nil, apperr.New(apperr.Conflict, "The case id is taken; retry without the Idempotency-Key.")
	}
	r.m.Transition(ctx, "case", "create", CreateOutcome(rep.Code()))
	return c, nil
}

// Get returns the tenant's case, or NotFound (also for another tenant's case).
func (r *Cases) Get(ctx context.Context, tenant, id string) (*cases.Case, error) {
	if !caseIDPattern.MatchString(id) {
		return nil, fmt.Errorf("case get: %w", apperr.NotFound)
	}
	m, err := r.c.Do(ctx, r.c.B().Hgetall().Key(r.caseKeys(r.TenantTag(tenant), id)[0]).Build()).AsStrMap()
	if err != nil {
		return nil, CommandError("case get", err)
	}
	return r.decode(ctx, m, id)
}

// History lists the case's transitions, newest first (at most the configured history max).
func (r *Cases) History(ctx context.Context, tenant, id string) ([]cases.Event, error) {
	if !caseIDPattern.MatchString(id) {
		return nil, fmt.Errorf("case history: %w", apperr.NotFound)
	}
	entries, err := r.history(ctx, tenant, r.caseKeys(r.TenantTag(tenant), id))
	if err != nil {
		return nil, err
	}
	out := make([]cases.Event, 0, len(entries))
	for _, e := range entries {
		ev, err := r.decodeEvent(ctx, e.FieldValues)
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// history reads the history stream of the case whose hash and stream are keys[0] and keys[1]
// (NotFound when the hash is absent or another tenant's).
func (r *Cases) history(ctx context.Context, tenant string, keys []string) ([]rueidis.XRangeEntry, error) {
	res := r.c.DoMulti(ctx,
		r.c.B().Hget().Key(keys[0]).Field("tenantId").Build(),
		r.c.B().Xrevrange().Key(keys[1]).End("+").Start("-").Count(int64(r.o.HistoryMax)).Build())
	owner, err := res[0].ToString()
	if err != nil {
		return nil, CommandError("case history", err)
	}
	if owner != tenant {
		return nil, fmt.Errorf("case history: %w", apperr.NotFound)
	}
	entries, err := res[1].AsXRange()
	if err != nil {
		return nil, CommandError("case history", err)
	}
	return entries, nil
}

// checkNew refuses what the keys and the case's lifetime cannot hold: a malformed id, no
// tenant, a due time beyond the open TTL (the case would expire before it is due). The field
// rules are the service's (cases.Service.Create).
func (r *Cases) checkNew(in cases.NewCase) error {
	switch {
	case !caseIDPattern.MatchString(in.ID):
		return apperr.New(apperr.Validation, "The case id is malformed.")
	case in.Tenant == "":
		return apperr.New(apperr.Unauthenticated, "The caller has no tenant.")
	case in.DueAt.After(time.Now().Add(r.o.OpenTTL)):
		return apperr.Newf(apperr.Unprocessable, "dueAt must be within %s from now (a case lives that long while open).", r.o.OpenTTL)
	}
	return nil
}

// register puts the tenant tag in the sweepers' registry.
func (r *Cases) register(ctx context.Context, tag string) error {
	ttl := r.o.OpenTTL + tenantRegistryMargin
	rep, err := RunScript(ctx, r.c, r.m, "case_tenant_add", "case tenant register", scriptCaseTenant, []string{r.registryKey()},
		[]string{tag, FormatMs(ttl.Milliseconds()), strconv.Itoa(MaxCaseTenants)})
	if err != nil {
		return err
	}
	if err := caseAddReplies.Check(rep); err != nil {
		return BadReply(ctx, r.m, "case_tenant_add", err)
	}
	if rep.Code() == CodeBound {
		return apperr.Newf(apperr.BoundExceeded, "The gateway tracks cases for at most %d tenants.", MaxCaseTenants)
	}
	return nil
}

// index puts the case in its tenant's due index.
func (r *Cases) index(ctx context.Context, tag, id string, due time.Time) error {
	rep, err := RunScript(ctx, r.c, r.m, "case_due_add", "case due index", scriptCaseDueAdd, []string{r.dueKey(tag)},
		[]string{id, FormatMs(due.UnixMilli()), FormatMs(r.o.OpenTTL.Milliseconds()), strconv.Itoa(MaxDueCases)})
	if err != nil {
		return err
	}
	if err := caseAddReplies.Check(rep); err != nil {
		return BadReply(ctx, r.m, "case_due_add", err)
	}
	if rep.Code() == CodeBound {
		return dueBoundError()
	}
	return nil
}

// dueBoundError refuses a case its tenant's full due index cannot take.
func dueBoundError() error {
	return apperr.Newf(apperr.BoundExceeded, "A tenant has at most %d cases awaiting their due time.", MaxDueCases)
}

// quotaKey is the tenant's quota set of live cases.
func (r *Cases) quotaKey(tenant string) string {
	return r.keys.Key("quota", r.TenantTag(tenant), "cases")
}
