package impl

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/lib/pq"

	"github.com/crmservice/crm/gen"
)

// localMinute is the layout of a task's date_start and date_finish in requests.
const localMinute = "2006-01-02 15:04"

// taskRow holds the fields of a new task; its json form is the journal's record
// of the insert.
type taskRow struct {
	CompanyID       int64           `json:"company_id"`
	DealID          *int64          `json:"deal_id,omitempty"`
	ContactID       *int64          `json:"contact_id,omitempty"`
	Note            string          `json:"note"`
	TypeID          int64           `json:"type_id"`
	StatusID        int             `json:"status_id"`
	UserID          int64           `json:"user_id"`
	AssignerID      int64           `json:"assigner_id"`
	DateStart       json.RawMessage `json:"date_start"`            // as stored, set from RETURNING
	DateFinish      json.RawMessage `json:"date_finish,omitempty"` // as stored
	DoneAt          json.RawMessage `json:"done_at,omitempty"`     // as stored
	IsHot           bool            `json:"is_hot"`
	ReminderMinutes *int            `json:"reminder_minutes,omitempty"`
	Tags            pq.StringArray  `json:"tags,omitempty"`
}

// TaskInsert implements POST /task/insert. The counterparty must be one the
// token owner sees, and a linked deal one of its deals that the owner sees: an
// invisible one behaves as a missing one.
func (s *Server) TaskInsert(ctx context.Context, req gen.TaskInsertRequestObject) (gen.TaskInsertResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	in := req.Body
	start, err := parseLocalMinute("date_start", in.DateStart)
	if err != nil {
		return nil, err
	}
	finish, err := parseLocalMinute("date_finish", in.DateFinish)
	if err != nil {
		return nil, err
	}
	row := taskRow{
		CompanyID: in.CompanyId, DealID: in.DealId, ContactID: in.ContactId, Note: in.Note, TypeID: in.TypeId,
		StatusID: 1, UserID: p.UserID, AssignerID: p.UserID, ReminderMinutes: in.ReminderMinutes,
		Tags: splitTags(str(in.Tags)),
	}
	if in.StatusId != nil {
		row.StatusID = int(*in.StatusId)
	}
	if in.UserId != nil {
		row.UserID = *in.UserId
	}
	row.IsHot = in.IsHot != nil && *in.IsHot == gen.TaskInsertRequestIsHotN1

	journalRow, err := json.Marshal(row)
	if err != nil {
		return nil, fmt.Errorf("journal task: %w", err)
	}
	var out struct {
		Error      sql.NullString `db:"o_error"`
		ID         sql.NullInt64  `db:"o_id"`
		DateStart  rawJSON        `db:"o_date_start"`
		DateFinish rawJSON        `db:"o_date_finish"`
		DoneAt     rawJSON        `db:"o_done_at"`
	}
	// crm_task_insert (db/functions/task_insert.sql): the checks of the
	// responsible user, the counterparty and the deal, the row and its journal
	// in one call.
	err = s.callWrite(ctx, &out, "*", "crm_task_insert",
		p.writerArgs(in.UserId != nil && *in.UserId != 0, row.UserID,
			row.CompanyID, row.DealID, row.ContactID, row.Note, row.TypeID, row.StatusID, start, finish, row.IsHot,
			row.ReminderMinutes, row.Tags, string(journalRow))...)
	if err != nil {
		return nil, dbError(fmt.Errorf("insert task: %w", err))
	}
	switch out.Error.String {
	case "inactive":
		return nil, badRequest("user_id: user %d is deactivated", row.UserID)
	case "company":
		return nil, companyNotFound(row.CompanyID)
	case "deal":
		return nil, badRequest("%s", constraintErrors["tasks_deal_fk"])
	}
	id := out.ID.Int64
	return gen.TaskInsert200JSONResponse{Body: success(strconv.FormatInt(id, 10))}, nil
}

// localSecond is the same with seconds, as the task lists return them.
const localSecond = localMinute + ":05"

// parseLocalMinute checks an optional `YYYY-MM-DD HH:MM` or `YYYY-MM-DD
// HH:MM:SS` of a request (the schema's pattern lets 2026-13-45 25:99 through)
// and returns it for $n::timestamp, or nil when omitted.
func parseLocalMinute(field string, v *string) (*string, error) {
	if v == nil {
		return nil, nil
	}
	layout := localMinute
	if len(*v) == len(localSecond) {
		layout = localSecond
	}
	if _, err := time.Parse(layout, *v); err != nil {
		return nil, badRequest("%s: not a valid date and time (YYYY-MM-DD HH:MM or YYYY-MM-DD HH:MM:SS)", field)
	}
	return v, nil
}

// rawJSON scans a JSON text column, keeping SQL NULL as an empty (omitted) value.
type rawJSON json.RawMessage

// MarshalJSON writes the JSON text as it is (null when empty).
func (r rawJSON) MarshalJSON() ([]byte, error) {
	if len(r) == 0 {
		return []byte("null"), nil
	}
	return r, nil
}

func (r *rawJSON) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*r = nil
	case string:
		*r = rawJSON(v)
	case []byte:
		*r = append(rawJSON(nil), v...)
	default:
		return fmt.Errorf("rawJSON: cannot scan %T", src)
	}
	return nil
}

// TaskList implements GET /task/list: the visible tasks of a counterparty (of
// one of its deals with deal_id), latest start first.
func (s *Server) TaskList(ctx context.Context, req gen.TaskListRequestObject) (gen.TaskListResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	q := sqlFor(p)
	q.bind("company", req.Params.CompanyId)
	q.set("byDeal", "TRUE")
	if req.Params.DealId != nil {
		q.set("byDeal", "t.deal_id = "+q.arg(*req.Params.DealId))
	}
	q.set("visible", p.seesTask("t"))
	env, err := s.quickList(ctx, q, `
		SELECT count(*) AS rows,
		       coalesce(jsonb_agg(jsonb_build_object(
		           'id', t.id, 'note', t.note, 'status_id', t.status_id,
		           'status', CASE t.status_id WHEN 2 THEN 'done' ELSE 'in work' END,
		           'type_id', t.type_id, 'type', coalesce(dt.name, ''),
		           'date_start', to_char(t.date_start AT TIME ZONE {tz}::text, 'YYYY-MM-DD HH24:MI:SS'),
		           'date_finish', to_char(t.date_finish AT TIME ZONE {tz}::text, 'YYYY-MM-DD HH24:MI:SS'),
		           'result', t.result, 'user_id', t.user_id, 'user_name', coalesce(u.name, ''), 'assigner_id', t.assigner_id,
		           'company_id', t.company_id, 'company_name', CASE WHEN {c_seen} THEN c.name ELSE '' END, 'deal_id', t.deal_id, 'contact_id', t.contact_id,
		           'is_hot', CASE WHEN t.is_hot THEN 1 ELSE 0 END, 'tags', array_to_string(t.tags, ','))
		         ORDER BY t.date_start DESC, t.id DESC), '[]')::text AS value
		  FROM tasks t
		  JOIN companies c ON c.account_id = {acc} AND c.id = t.company_id
		  LEFT JOIN users u ON u.account_id = {acc} AND u.id = t.user_id
		  LEFT JOIN directory_values dt ON dt.account_id = {acc} AND dt.id = t.type_id
		 WHERE t.account_id = {acc} AND t.company_id = {company} AND {byDeal} AND c.deleted_at IS NULL AND {visible}`)
	if err != nil {
		return nil, fmt.Errorf("list tasks of counterparty %d: %w", req.Params.CompanyId, err)
	}
	return gen.TaskList200JSONResponse(env), nil
}
