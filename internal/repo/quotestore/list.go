package quotestore

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/hashgate/hashgate/internal/page"
	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/redis/rueidis"
)

// The list indexes of a tenant's drafts (quote_index.lua; docs/KEYS.md, "List indexes"), in
// the order the scripts take them after the coordinates hash.
var indexNames = []string{"all", "customer", "status", "channel"}

// Listing bounds: a page examines at most scanFactor × its size members of the index (a page
// may come back short with a next cursor), and prunes at most pruneMax expired drafts.
const (
	scanFactor = 4
	pruneMax   = 64
)

// indexKeys are the tenant's index keys: the coordinates hash, then indexNames.
func (r *Store) indexKeys(tag string) []string {
	return r.Keys.IndexKeys("quoteidx", tag, indexNames...)
}

// tags is the value tags of a draft's customer, status and channel as the write scripts take
// them (quote_index), "=" for a value the write leaves as it is.
func (r *Store) tags(customer, status, channel string) string {
	t := [3]string{"=", "=", "="}
	for i, v := range [3]string{customer, status, channel} {
		if v != "" {
			t[i] = repo.IndexTag(r.Hasher, indexNames[i+1], v)
		}
	}
	return t[0] + " " + t[1] + " " + t[2]
}

// List answers one page of q's drafts, newest first by last update, in one round trip: the
// script reads the most selective index the filters allow (customer, then channel, then one
// status, else all), checks each candidate's summary against every filter, and prunes.
func (r *Store) List(ctx context.Context, q quotes.ListQuery) (quotes.Page, error) {
	tag := r.Hasher.TenantTag(q.Tenant)
	index, value := 1, ""
	switch {
	case q.CustomerID != "":
		index, value = 2, q.CustomerID
	case q.SalesChannel != "":
		index, value = 4, q.SalesChannel
	case len(q.Statuses) == 1:
		index, value = 3, q.Statuses[0]
	}
	vtag := ""
	if index > 1 {
		vtag = repo.IndexTag(r.Hasher, indexNames[index-1], value)
	}
	scope := listScope(q)
	cursor, err := repo.DecodeCursor(q.Cursor, scope, vtag)
	if err != nil {
		return quotes.Page{}, err
	}
	since := ""
	if !q.UpdatedSince.IsZero() {
		since = repo.FormatMs(max(q.UpdatedSince.UnixMilli(), 0))
	}
	keys := append([]string{r.Keys.Key("quota", tag, "quotes")}, r.indexKeys(tag)...)
	args := []string{q.Tenant, r.Keys.Key("quote", tag) + ":", strconv.Itoa(index), vtag, cursor, since,
		strconv.Itoa(q.Limit), strconv.Itoa(q.Limit * scanFactor), strconv.Itoa(pruneMax),
		q.CustomerID, q.SalesChannel, strings.Join(q.Statuses, " ")}
	var rep repo.Reply
	err = r.writes.Read(ctx, keys[0], func(c rueidis.Client) (err error) {
		rep, err = repo.RunScript(ctx, c, r.Metrics, "quote_list", "quote list", scriptList, keys, args)
		return err
	})
	if err != nil {
		return quotes.Page{}, err
	}
	next, err := listNext(rep, q.Limit) // {'OK', next, summary...}
	if err != nil {
		return quotes.Page{}, repo.BadReply(ctx, r.Metrics, "quote_list", err)
	}
	pg := quotes.Page{Items: make([]quotes.Quote, 0, rep.Len()-1), NextCursor: page.Encode(scope, next)}
	for i := 1; i < rep.Len(); i++ {
		m, err := rep.StrMap(i)
		if err != nil {
			return quotes.Page{}, repo.BadReply(ctx, r.Metrics, "quote_list", err)
		}
		v, err := r.objects.Decode(ctx, m, m["quoteId"])
		if err != nil {
			return quotes.Page{}, err
		}
		pg.Items = append(pg.Items, *v)
	}
	return pg, nil
}

// listScope names q's filters in its cursors: a cursor sent with other filters is refused. It
// is a digest, so a cursor carries no filter value.
func listScope(q quotes.ListQuery) string {
	since := ""
	if !q.UpdatedSince.IsZero() {
		since = strconv.FormatInt(q.UpdatedSince.UnixMilli(), 10)
	}
	sum := sha256.Sum256([]byte(strings.Join([]string{q.CustomerID, q.SalesChannel, strings.Join(q.Statuses, ","), since}, "\n")))
	return "q." + base64.RawURLEncoding.EncodeToString(sum[:6])
}

// listNext checks a quote_list reply ({'OK', next, at most limit summaries}) and returns next.
func listNext(rep repo.Reply, limit int) (string, error) {
	switch {
	case rep.Code() != repo.CodeOK:
		return "", rep.Unexpected()
	case rep.Len() > limit+1:
		return "", rep.Want(limit + 1)
	}
	if err := rep.WantAtLeast(1); err != nil {
		return "", err
	}
	return rep.Str(0)
}
