package impl

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/lib/pq"

	"github.com/crmservice/crm/gen"
)

// The event feed (GET /event/list) reads the journal by position: positions
// are dense per account and handed out in commit order (writeJournal,
// migration 0030), so a reader that has seen position n has seen every event
// before it, and one that asks for the events after n misses none.

// eventScanLimit is how many events past the cursor one call reads at most,
// matching the filters or not; the cursor then moves past those it read.
const eventScanLimit = 5000

// eventCursorPrefix starts the text of every cursor, so that a cursor of
// another feed (or a made-up one) is refused rather than misread.
const eventCursorPrefix = "ev1."

// encodeEventCursor is the opaque cursor after position pos of account.
func encodeEventCursor(account, pos int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(eventCursorPrefix + strconv.FormatInt(account, 10) + "." + strconv.FormatInt(pos, 10)))
}

// decodeEventCursor reads a cursor of account's feed and returns its position.
func decodeEventCursor(account int64, cursor string) (int64, error) {
	bad := badRequest("cursor: not a cursor of this account's event feed")
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return 0, bad
	}
	rest, ok := strings.CutPrefix(string(raw), eventCursorPrefix)
	if !ok {
		return 0, bad
	}
	acc, pos, ok := strings.Cut(rest, ".")
	if !ok || acc != strconv.FormatInt(account, 10) {
		return 0, bad
	}
	n, err := strconv.ParseInt(pos, 10, 64)
	if err != nil || n < 0 {
		return 0, bad
	}
	return n, nil
}

// eventActions are the actions of the journal (its CHECK constraint).
var eventActions = map[string]bool{"insert": true, "update": true, "delete": true, "send": true, "receive": true,
	"deliver": true, "delivery_failed": true}

// eventModules are the module codes of the journal's rows.
var eventModules = map[int64]bool{ModuleCompanies: true, ModuleTasks: true, ModuleDocuments: true, ModuleFinance: true,
	ModuleDeals: true, ModuleMail: true, ModuleWebhooks: true}

// parseEventFilters reads the module and action filters of the feed.
func parseEventFilters(module, action *string) (modules []int64, actions []string, err error) {
	if module != nil {
		if modules, err = parseIDs("module", *module); err != nil {
			return nil, nil, err
		}
		for _, m := range modules {
			if !eventModules[m] {
				return nil, nil, badRequest("module: %d is not a module of the journal (1, 2, 4, 5, 20, 24, 60)", m)
			}
		}
	}
	if action != nil {
		for _, a := range strings.Split(*action, ",") {
			if !eventActions[a] {
				return nil, nil, badRequest("action: %q is not an action of the journal", a)
			}
			actions = append(actions, a)
		}
	}
	return modules, actions, nil
}

// eventPage is what the feed's statement reads.
type eventPage struct {
	Scanned     int    `db:"scanned"`
	LastScanned int64  `db:"last_scanned"`
	Matched     int    `db:"matched"`
	LastMatched int64  `db:"last_matched"`
	Events      string `db:"events"`
}

// eventListCall is the call of crm_event_list (db/functions/event_list.sql).
var eventListCall = newCallStmt(`SELECT scanned, last_scanned, matched, last_matched, events
	FROM crm_event_list($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`)

// EventList implements GET /event/list.
func (s *Server) EventList(ctx context.Context, req gen.EventListRequestObject) (gen.EventListResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	params := req.Params
	var after int64
	if params.Cursor != nil && *params.Cursor != "" {
		if after, err = decodeEventCursor(p.AccountID, *params.Cursor); err != nil {
			return nil, err
		}
	}
	limit := 100
	if params.RecordsOnpage != nil {
		limit = *params.RecordsOnpage
	}
	modules, actions, err := parseEventFilters(params.Module, params.Action)
	if err != nil {
		return nil, err
	}
	var page eventPage
	if s.fastPath {
		// crm_event_list (db/functions/event_list.sql): the same page by
		// statements of one table each.
		var mods any
		if modules != nil {
			mods = pq.Array(modules)
		}
		var acts any
		if actions != nil {
			acts = pq.Array(actions)
		}
		err = s.generic(ctx).get(ctx, &page, s.call(eventListCall),
			p.callerArgs(after, eventScanLimit, limit, mods, acts)...)
	} else {
		page, err = s.eventPageSQL(ctx, p, after, limit, modules, actions)
	}
	if err != nil {
		return nil, fmt.Errorf("read the event feed: %w", err)
	}
	// A full page ends at its last event; otherwise the cursor passes every
	// event read, matching or not.
	next, more := page.LastScanned, page.Scanned == eventScanLimit
	if page.Matched == limit {
		next, more = page.LastMatched, true
	}
	value := `{"events":` + page.Events + `,"cursor":"` + encodeEventCursor(p.AccountID, next) + `","more":` + strconv.FormatBool(more) + `}`
	env := success(value)
	env.Rows, env.Pages, env.Page = page.Matched, quickPage(page.Matched), quickPage(page.Matched)
	return gen.EventList200JSONResponse(env), nil
}

// eventPageSQL reads a page of the event feed by one statement, as plain
// PostgreSQL serves it.
func (s *Server) eventPageSQL(ctx context.Context, p *Principal, after int64, limit int, modules []int64, actions []string) (eventPage, error) {
	q := sqlFor(p)
	q.bind("after", after)
	q.bind("scan", eventScanLimit)
	q.bind("limit", limit)
	filters := []string{p.seesJournal("j")}
	if modules != nil {
		filters = append(filters, "j.module = ANY ("+q.arg(pq.Array(modules))+"::smallint[])")
	}
	if actions != nil {
		filters = append(filters, "j.action = ANY ("+q.arg(pq.Array(actions))+"::text[])")
	}
	q.set("filters", strings.Join(filters, " AND "))
	var page eventPage
	err := s.stmts(ctx).get(ctx, &page, q.expand(`
		WITH scanned AS MATERIALIZED (
			SELECT j.position, j.user_id, j.module, j.action
			  FROM journal j
			 WHERE j.account_id = {acc} AND j.position > {after}
			 ORDER BY j.position
			 LIMIT {scan}),
		matched AS MATERIALIZED (
			SELECT j.position FROM scanned j WHERE {filters} ORDER BY j.position LIMIT {limit})
		SELECT (SELECT count(*) FROM scanned) AS scanned,
		       coalesce((SELECT max(position) FROM scanned), {after}) AS last_scanned,
		       (SELECT count(*) FROM matched) AS matched,
		       coalesce((SELECT max(position) FROM matched), 0) AS last_matched,
		       coalesce((SELECT json_agg(json_build_object(
		                    'id', j.id, 'date', to_char(j.at AT TIME ZONE {tz}::text, 'YYYY-MM-DD HH24:MI:SS'),
		                    'user_id', j.user_id, 'user_name', coalesce(u.name, ''), 'token_id', j.token_id,
		                    'module', j.module, 'entity', j.entity, 'record_id', j.record_id, 'action', j.action,
		                    'changes', j.changes) ORDER BY j.position)
		                   FROM matched m
		                   JOIN journal j ON j.account_id = {acc} AND j.position = m.position
		                   LEFT JOIN users u ON u.account_id = {acc} AND u.id = j.user_id), '[]')::text AS events`), q.args...)
	return page, err
}
