package impl

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/crmservice/crm/gen"
)

// taskState is a task as POST /task/update reads and compares it: times as
// their JSON text (what the journal records), NULL as nil.
type taskState struct {
	Note       string         `db:"note"`
	TypeID     int64          `db:"type_id"`
	StatusID   int            `db:"status_id"`
	UserID     int64          `db:"user_id"`
	Result     string         `db:"result"`
	IsHot      bool           `db:"is_hot"`
	Tags       pq.StringArray `db:"tags"`
	DateStart  rawJSON        `db:"date_start"`
	DateFinish rawJSON        `db:"date_finish"`
	DoneAt     rawJSON        `db:"done_at"`
}

// taskStateColumns reads a taskState from the rows of alias t.
const taskStateColumns = `t.note, t.type_id, t.status_id, t.user_id, t.result, t.is_hot, t.tags,
	to_json(t.date_start)::text AS date_start, to_json(t.date_finish)::text AS date_finish, to_json(t.done_at)::text AS done_at`

// changes lists the fields that differ between old and s, as the journal
// records an update: {field: [old, new]}.
func (s taskState) changes(old taskState) map[string][2]any {
	out := map[string][2]any{}
	add := func(name string, o, n any, same bool) {
		if !same {
			out[name] = [2]any{o, n}
		}
	}
	raw := func(v rawJSON) any {
		if v == nil {
			return nil
		}
		return json.RawMessage(v)
	}
	add("note", old.Note, s.Note, old.Note == s.Note)
	add("type_id", old.TypeID, s.TypeID, old.TypeID == s.TypeID)
	add("status_id", old.StatusID, s.StatusID, old.StatusID == s.StatusID)
	add("user_id", old.UserID, s.UserID, old.UserID == s.UserID)
	add("result", old.Result, s.Result, old.Result == s.Result)
	add("is_hot", old.IsHot, s.IsHot, old.IsHot == s.IsHot)
	add("tags", old.Tags, s.Tags, slices.Equal(old.Tags, s.Tags))
	add("date_start", raw(old.DateStart), raw(s.DateStart), bytes.Equal(old.DateStart, s.DateStart))
	add("date_finish", raw(old.DateFinish), raw(s.DateFinish), bytes.Equal(old.DateFinish, s.DateFinish))
	add("done_at", raw(old.DoneAt), raw(s.DoneAt), bytes.Equal(old.DoneAt, s.DoneAt))
	return out
}

// TaskUpdate implements POST /task/update: finish (status 2, completion time
// now), reopen (status 1, no completion time), reschedule, reassign, or change
// the text of a task the token owner sees. Only fields whose value differs are
// written, in one UPDATE, with one journal row of their old and new values.
func (s *Server) TaskUpdate(ctx context.Context, req gen.TaskUpdateRequestObject) (gen.TaskUpdateResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	in := req.Body
	if err := s.refuseInactiveUser(ctx, p, "user_id", in.UserId); err != nil {
		return nil, err
	}
	start, err := parseLocalMinute("date_start", in.DateStart)
	if err != nil {
		return nil, err
	}
	var finish *string
	if in.DateFinish != nil && *in.DateFinish != "" {
		if finish, err = parseLocalMinute("date_finish", in.DateFinish); err != nil {
			return nil, err
		}
	}
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		q := sqlFor(p)
		q.bind("id", in.Id)
		q.set("visible", p.seesTask("t"))
		var old taskState
		// The lock keeps the comparison and the write together.
		err := tx.GetContext(ctx, &old, q.expand(`SELECT `+taskStateColumns+`
			  FROM tasks t WHERE t.account_id = {acc} AND t.id = {id} AND {visible} FOR NO KEY UPDATE`), q.args...)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("task %d not found", in.Id)
		}
		if err != nil {
			return fmt.Errorf("read task %d: %w", in.Id, err)
		}
		u := sqlFor(p)
		u.bind("id", in.Id)
		var set []string
		assign := func(column string, v any) { set = append(set, column+" = "+u.arg(v)) }
		if in.Note != nil {
			assign("note", *in.Note)
		}
		if in.Result != nil {
			assign("result", *in.Result)
		}
		if in.TypeId != nil {
			assign("type_id", *in.TypeId)
		}
		if in.UserId != nil {
			assign("user_id", *in.UserId)
		}
		if in.IsHot != nil {
			assign("is_hot", *in.IsHot == gen.TaskUpdateRequestIsHotN1)
		}
		if in.Tags != nil {
			assign("tags", splitTags(*in.Tags))
		}
		if start != nil {
			set = append(set, "date_start = "+u.arg(*start)+"::timestamp AT TIME ZONE {tz}::text")
		}
		if in.DateFinish != nil {
			if finish == nil {
				set = append(set, "date_finish = NULL")
			} else {
				set = append(set, "date_finish = "+u.arg(*finish)+"::timestamp AT TIME ZONE {tz}::text")
			}
		}
		if in.StatusId != nil {
			// Finishing sets the completion time once; reopening clears it. Decided
			// here from the row read under lock: Citus refuses now() beside a column
			// in an UPDATE.
			status := int(*in.StatusId)
			set = append(set, "status_id = "+u.arg(status)+"::smallint")
			switch {
			case status == 1:
				set = append(set, "done_at = NULL")
			case old.StatusID != 2:
				set = append(set, "done_at = now()")
			}
		}
		if len(set) == 0 {
			return badRequest("request body: at least one field besides \"id\" is required")
		}
		u.set("set", strings.Join(set, ", "))
		var now taskState
		err = tx.GetContext(ctx, &now, u.expand(`
			WITH t AS (UPDATE tasks SET {set} WHERE account_id = {acc} AND id = {id}
			           RETURNING note, type_id, status_id, user_id, result, is_hot, tags, date_start, date_finish, done_at)
			SELECT `+taskStateColumns+` FROM t`), u.args...)
		if err != nil {
			return fmt.Errorf("update task %d: %w", in.Id, err)
		}
		changes := now.changes(old)
		if len(changes) == 0 {
			// The stored values were passed: undo the row version just written.
			return errUnchanged
		}
		return writeJournal(ctx, tx, p, []journalEntry{{ModuleTasks, "task", in.Id, "update", changes}})
	})
	if err != nil && !errors.Is(err, errUnchanged) {
		return nil, dbError(err)
	}
	return gen.TaskUpdate200JSONResponse{Body: success("1")}, nil
}

// errUnchanged rolls back an update that changed no value: the operation
// succeeds and nothing is written.
var errUnchanged = errors.New("nothing changed")
