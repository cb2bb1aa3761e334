package cases

import (
	"fmt"
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/hashgate/hashgate/internal/apperr"
)

// maxDuePast bounds how far in the past a new case's dueAt may be.
const maxDuePast = 365 * 24 * time.Hour

var (
	idPattern      = regexp.MustCompile(`^c_[0-9a-hjkmnp-tv-z]{26}$`)
	subjectPattern = regexp.MustCompile(`^[A-Za-z0-9._:/#-]{1,128}$`)
	teamPattern    = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)
	// assigneePattern: a person as a token's subject names one.
	assigneePattern = regexp.MustCompile(`^[A-Za-z0-9._@:+-]{1,128}$`)
)

// Me is the assignee a list filter reads as the caller's own subject; no case is assigned to it.
const Me = "me"

// checkAssignee checks an optional assignee of a case.
func checkAssignee(a string) error {
	switch {
	case a == "":
		return nil
	case a == Me:
		return apperr.New(apperr.Validation, "assignee \"me\" is reserved (in a list it stands for the caller); name the person.")
	case !assigneePattern.MatchString(a):
		return apperr.New(apperr.Validation, "assignee must be 1..128 of A-Z a-z 0-9 . _ @ : + -")
	}
	return nil
}

// validateNew checks a new case's fields. How far ahead dueAt may be is the store's bound (a
// case lives its open TTL).
func validateNew(in NewCase) error {
	switch {
	case !idPattern.MatchString(in.ID):
		return apperr.New(apperr.Validation, "The case id is malformed.")
	case in.Tenant == "" || len(in.Tenant) > 128:
		return apperr.New(apperr.Unauthenticated, "The caller has no tenant.")
	case !subjectPattern.MatchString(in.SubjectRef):
		return apperr.New(apperr.Validation, "subjectRef must be 1..128 of A-Z a-z 0-9 . _ : / # -")
	case !teamPattern.MatchString(in.AssignedTeam):
		return apperr.New(apperr.Validation, "assignedTeam must be 1..64 of A-Z a-z 0-9 . _ -")
	case checkAssignee(in.Assignee) != nil:
		return checkAssignee(in.Assignee)
	case !validReason(in.Reason, true):
		return apperr.New(apperr.Validation, "reason must be 1..256 characters of valid UTF-8.")
	case len(in.Actor) > 256:
		return apperr.New(apperr.Validation, "The actor is too long.")
	case in.DueAt.Before(time.Now().Add(-maxDuePast)):
		return apperr.New(apperr.Unprocessable, "dueAt is more than a year in the past.")
	}
	return nil
}

// checkChange checks a transition request; an id that cannot be a case's is not found.
func checkChange(ch Change, reasonRequired bool) error {
	switch {
	case !idPattern.MatchString(ch.ID):
		return fmt.Errorf("case: %w", apperr.NotFound)
	case !validReason(ch.Reason, reasonRequired):
		return apperr.New(apperr.Validation, "reason must be 1..256 characters of valid UTF-8.")
	case len(ch.Actor) > 256:
		return apperr.New(apperr.Validation, "The actor is too long.")
	}
	return nil
}

func validReason(s string, required bool) bool {
	if s == "" {
		return !required
	}
	return utf8.ValidString(s) && utf8.RuneCountInString(s) <= 256
}
