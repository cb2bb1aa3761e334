package sessions

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hashgate/hashgate/internal/page"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// ListUser is a page of the live sessions of a user of tenant, newest first (list).
func (s *Service) ListUser(ctx context.Context, tenant, userID, cursor string, limit int) (page.Page[session.Session], error) {
	if err := checkUserID("path:userId", userID); err != nil {
		return page.Page[session.Session]{}, err
	}
	return s.list(ctx, s.userTag(tenant, userID), tenant, cursor, limit)
}

// list is a page of the live sessions of the user with tag, newest first by creation time,
// then by id. Neither changes in a session's life (rotation and step-up keep both), so that
// pair is an exact position: a walk lists no session twice and skips none that stays live.
// The store reads the user's sessions whole (the device index is bounded by
// MaxSessionsPerUser) and the page is cut here.
func (s *Service) list(ctx context.Context, tag, tenant, cursor string, limit int) (page.Page[session.Session], error) {
	scope := "sessions\x00" + tag
	if _, err := page.Decode(scope, cursor); err != nil { // before the read: a wrong cursor costs none
		return page.Page[session.Session]{}, err
	}
	out, err := s.store.List(ctx, tag, tenant)
	if err != nil {
		return page.Page[session.Session]{}, err
	}
	slices.SortFunc(out, func(a, b session.Session) int { // listPos descending
		return cmp.Or(cmp.Compare(b.CreatedAt.UnixMilli(), a.CreatedAt.UnixMilli()), strings.Compare(b.Ref.ID(), a.Ref.ID()))
	})
	return page.Of(out, listPos, scope, cursor, limit, true, validListPos)
}

// listPos is a session's position in its user's list: creation time (13 digits of Unix ms,
// so the order of the strings is the order of the times), a dot, the session id.
func listPos(s session.Session) string {
	return fmt.Sprintf("%013d.%s", s.CreatedAt.UnixMilli(), s.Ref.ID())
}

func validListPos(pos string) bool {
	ms, id, ok := strings.Cut(pos, ".")
	_, idOK := session.ParseID(id)
	return ok && len(ms) == 13 && strings.Trim(ms, "0123456789") == "" && idOK
}
