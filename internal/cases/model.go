package cases

import (
	"time"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/idempotency"
)

// Case statuses and the reason and actor an auto-escalation records.
const (
	Open                = "OPEN"
	Escalated           = "ESCALATED"
	Resolved            = "RESOLVED"
	AutoEscalationCause = "auto_escalate" // the transition's own name, as the history records it
	SweeperActor        = "sweeper"
)

// Case is an escalation case.
type Case struct {
	ID                   string
	Tenant               string
	SubjectRef           string
	Status               string
	AssignedTeam         string
	Assignee             string // the person within AssignedTeam; empty while in the team's queue
	EscalationLevel      int
	DueAt                time.Time
	StateVersion         int64
	LastTransitionAt     time.Time // zero for a v1 case never transitioned since
	LastTransitionReason string
	ResolvedAt           time.Time // zero unless RESOLVED
	AutoEscalatedAt      time.Time // zero until the sweeper escalated it
	SchemaVersion        int
	CreatedAt            time.Time
	UpdatedAt            time.Time
}

// Event is one entry of a case's history.
type Event struct {
	At              time.Time
	Transition      string // create, escalate, assign, resolve, reopen, auto_escalate
	FromStatus      string
	ToStatus        string
	EscalationLevel int
	AssignedTeam    string
	Assignee        string
	Reason          string
	Actor           string
	StateVersion    int64
	// Pos is the entry's place in the history, the store's (opaque here): exact, so a page
	// of the history starts strictly after the previous page's last Pos.
	Pos string
}

// NewCase is what Create needs. ID is optional: an idempotent create passes the id derived
// from its Idempotency-Key (DerivedID), so a retry after a crash or a timeout lands on the
// same case.
type NewCase struct {
	ID string
	// Keyed: ID was derived from an Idempotency-Key, so a case may already exist under it (an
	// attempt of the same request that ran late); a random ID names no case.
	Keyed        bool
	Tenant       string
	SubjectRef   string
	AssignedTeam string
	Assignee     string // optional
	DueAt        time.Time
	Reason       string
	Actor        string
}

// Change is one requested transition. IfMatch < 0 means no If-Match was sent.
type Change struct {
	Tenant       string
	ID           string
	IfMatch      int64
	Reason       string
	Actor        string
	AssignedTeam string // assign only
	// Assignee is the person within AssignedTeam (assign only); empty leaves the case
	// unassigned in the team's queue (the assignment replaces the old one whole).
	Assignee string
}

// AutoOutcome is what one auto-escalation attempt found.
type AutoOutcome string

// Auto-escalation outcomes.
const (
	AutoEscalated AutoOutcome = "escalated"
	AutoNotDue    AutoOutcome = "not_due"
	AutoNotOpen   AutoOutcome = "not_open"
	AutoAlready   AutoOutcome = "already"
	AutoAtMax     AutoOutcome = "at_max"
	AutoGone      AutoOutcome = "gone"
	// AutoCorrupt comes with an error: the case is unreadable, refused and logged by the store.
	AutoCorrupt AutoOutcome = "corrupt"
)

// Final reports whether the case can leave the due index after this outcome.
func (o AutoOutcome) Final() bool { return o != AutoNotDue }

// NewID returns a fresh, time-ordered case id.
func NewID() string { return "c_" + auth.NewTokenID(time.Now()) }

// DerivedID is the case id of an idempotent create: sum (a keyed hash of the tenant, the
// operation, the Idempotency-Key and the request) in NewID's shape, so every attempt of one
// keyed request names the same case.
func DerivedID(sum [16]byte) string { return "c_" + auth.TokenIDFrom(sum) }

// IDs are the case ids the idempotent create uses.
var IDs = idempotency.IDs{Fresh: NewID, Derived: DerivedID}
