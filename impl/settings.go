package impl

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/crmservice/crm/gen"
)

// The account's settings that the lists read: additional fields (the ADD_
// columns, table field_definitions) and ready filters (user_filter_ids, table
// user_filters). Admins change them through the API, operators through
// crm-server field|filter; each function here serves both (the API adds the
// journal row, the admin commands write none, as every admin command).

// FieldInput describes a new additional field.
type FieldInput struct {
	AccountID int64
	Module    int    // 1 counterparties, 20 deals
	Name      string // the list column is ADD_{Name}
	Title     string
	Type      string // text (default), number, date, boolean
}

// Field is an additional field as listed.
type Field struct {
	ID     int64  `db:"id" json:"id"`
	Module int    `db:"module" json:"module"`
	Name   string `db:"name" json:"name"`
	Title  string `db:"title" json:"title"`
	Type   string `db:"type" json:"type"`
}

// AddField defines an additional field and returns its id.
func AddField(ctx context.Context, db sqlx.QueryerContext, in FieldInput) (int64, error) {
	if in.Type == "" {
		in.Type = "text"
	}
	var id int64
	err := sqlx.GetContext(ctx, db, &id, `
		INSERT INTO field_definitions (account_id, module, name, title, type) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
		in.AccountID, in.Module, in.Name, in.Title, in.Type)
	if err != nil {
		return 0, adminDBError("add field", err, map[string]*Error{
			"field_definitions_account_id_fkey":            noAccount(in.AccountID),
			"field_definitions_account_id_module_name_key": conflict("module %d already has the field %q", in.Module, in.Name),
			"field_definitions_module_check":               badRequest("module: additional fields belong to module 1 (counterparties) or 20 (deals)"),
			"field_definitions_name_check":                 badRequest("name: letters, digits and _, at most 63"),
			"field_definitions_type_check":                 badRequest("type: text, number, date or boolean"),
			sqlStateOutOfRange:                             badRequest("module: additional fields belong to module 1 (counterparties) or 20 (deals)"),
		})
	}
	return id, nil
}

// ListFields returns the additional fields of an account (of one module when
// module is not 0), by module and name.
func ListFields(ctx context.Context, db sqlx.QueryerContext, accountID int64, module int) ([]Field, error) {
	fields := []Field{}
	err := sqlx.SelectContext(ctx, db, &fields, `
		SELECT id, module, name, title, type FROM field_definitions
		 WHERE account_id = $1 AND ($2 = 0 OR module = $2) ORDER BY module, name, id`, accountID, module)
	if err != nil {
		return nil, fmt.Errorf("list fields: %w", err)
	}
	return fields, nil
}

// RemoveField deletes the additional field id of an account and returns it.
// Records keep their values under its name.
func RemoveField(ctx context.Context, db sqlx.QueryerContext, accountID, id int64) (Field, error) {
	var f Field
	err := sqlx.GetContext(ctx, db, &f, `
		DELETE FROM field_definitions WHERE account_id = $1 AND id = $2 RETURNING id, module, name, title, type`, accountID, id)
	if errors.Is(err, sql.ErrNoRows) {
		return f, notFound("field %d not found", id)
	}
	if err != nil {
		return f, fmt.Errorf("remove field %d: %w", id, err)
	}
	return f, nil
}

// FilterInput describes a ready filter of the universal list.
type FilterInput struct {
	AccountID  int64
	Module     int // 1, 20 or 24
	Name       string
	Definition json.RawMessage // a JSON object of the module's filter parameters
}

// Filter is a ready filter as listed.
type Filter struct {
	ID         int64   `db:"id" json:"id"`
	Module     int     `db:"module" json:"module"`
	Name       string  `db:"name" json:"name"`
	Definition rawJSON `db:"definition" json:"definition"`
}

// checkFilterDefinition applies a definition to a list query of the module,
// as the list will, so that a definition the list would refuse is never
// stored. It returns the definition in its stored form.
func checkFilterDefinition(accountID int64, module int, def json.RawMessage) (json.RawMessage, error) {
	m := listModules[module]
	if _, ok := m.filtersOrNil()["user_filter_ids"]; !ok {
		return nil, badRequest("module: ready filters belong to module 1 (counterparties), 20 (deals) or 24 (mail)")
	}
	var values map[string]any
	if err := json.Unmarshal(def, &values); err != nil || values == nil {
		return nil, badRequest("definition: a JSON object of filter parameters")
	}
	if len(values) == 0 {
		return nil, badRequest("definition: at least one filter parameter")
	}
	fs, err := readyFilterValues(0, values)
	if err != nil {
		return nil, badRequest("definition: the value of each parameter is a string or a number")
	}
	p := &Principal{AccountID: accountID, Role: RoleAdmin, TimeZone: "UTC"}
	q := &listQuery{sqlText: sqlFor(p), p: p, m: m, colJoins: map[string]bool{}, sortJoins: map[string]bool{}}
	for _, f := range fs {
		if f.name == "user_filter_ids" {
			return nil, badRequest("definition: a ready filter cannot name other ready filters")
		}
	}
	if err := q.applyFilters(fs); err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, badRequest("definition: %s", e.Msg)
		}
		return nil, err
	}
	out, err := json.Marshal(values)
	if err != nil {
		return nil, fmt.Errorf("ready filter definition: %w", err)
	}
	return out, nil
}

// filtersOrNil is the module's filters, nil for no module.
func (m *listModule) filtersOrNil() map[string]listFilter {
	if m == nil {
		return nil
	}
	return m.filters
}

// AddFilter defines a ready filter and returns its id.
func AddFilter(ctx context.Context, db sqlx.QueryerContext, in FilterInput) (int64, error) {
	def, err := checkFilterDefinition(in.AccountID, in.Module, in.Definition)
	if err != nil {
		return 0, err
	}
	var id int64
	err = sqlx.GetContext(ctx, db, &id, `
		INSERT INTO user_filters (account_id, module, name, definition) VALUES ($1, $2, $3, $4::jsonb) RETURNING id`,
		in.AccountID, in.Module, in.Name, string(def))
	if err != nil {
		return 0, adminDBError("add ready filter", err, map[string]*Error{
			"user_filters_name_check": badRequest("name: a ready filter needs a name"),
			sqlStateOutOfRange:        badRequest("module: ready filters belong to module 1, 20 or 24"),
		})
	}
	return id, nil
}

// ListFilters returns the ready filters of an account (of one module when
// module is not 0), by module and name.
func ListFilters(ctx context.Context, db sqlx.QueryerContext, accountID int64, module int) ([]Filter, error) {
	filters := []Filter{}
	err := sqlx.SelectContext(ctx, db, &filters, `
		SELECT id, module, name, definition::text AS definition FROM user_filters
		 WHERE account_id = $1 AND ($2 = 0 OR module = $2) ORDER BY module, name, id`, accountID, module)
	if err != nil {
		return nil, fmt.Errorf("list ready filters: %w", err)
	}
	return filters, nil
}

// RemoveFilter deletes the ready filter id of an account and returns it.
func RemoveFilter(ctx context.Context, db sqlx.QueryerContext, accountID, id int64) (Filter, error) {
	var f Filter
	err := sqlx.GetContext(ctx, db, &f, `
		DELETE FROM user_filters WHERE account_id = $1 AND id = $2 RETURNING id, module, name, definition::text AS definition`,
		accountID, id)
	if errors.Is(err, sql.ErrNoRows) {
		return f, notFound("filter %d not found", id)
	}
	if err != nil {
		return f, fmt.Errorf("remove ready filter %d: %w", id, err)
	}
	return f, nil
}

// ---- the API

// FieldList implements GET /field/list.
func (s *Server) FieldList(ctx context.Context, req gen.FieldListRequestObject) (gen.FieldListResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	module := 0
	if req.Params.Module != nil {
		module = int(*req.Params.Module)
	}
	fields, err := ListFields(ctx, s.db(ctx), p.AccountID, module)
	if err != nil {
		return nil, err
	}
	return gen.FieldList200JSONResponse(quickListOf(fields)), nil
}

// quickListOf is the envelope of a quick list of rows.
func quickListOf[T any](rows []T) gen.Envelope {
	value, _ := json.Marshal(rows) // structs of strings and numbers
	return quickListEnvelope(listResult{Rows: len(rows), Value: string(value)})
}

// FieldInsert implements POST /field/insert (admins).
func (s *Server) FieldInsert(ctx context.Context, req gen.FieldInsertRequestObject) (gen.FieldInsertResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := p.requireAdmin(); err != nil {
		return nil, err
	}
	in := FieldInput{AccountID: p.AccountID, Module: int(req.Body.Module), Name: req.Body.Name, Title: str(req.Body.Title), Type: "text"}
	if req.Body.Type != nil {
		in.Type = string(*req.Body.Type)
	}
	var id int64
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		if id, err = AddField(ctx, tx, in); err != nil {
			return err
		}
		return writeJournal(ctx, tx, p, []journalEntry{{in.Module, "field", id, "insert",
			map[string]any{"module": in.Module, "name": in.Name, "title": in.Title, "type": in.Type}}})
	})
	var e *Error
	if errors.As(err, &e) && e.Code == CodeConflict {
		// A duplicate answers the existing record's id, as the counterparty's does.
		var existing int64
		if err := s.db(ctx).GetContext(ctx, &existing, `SELECT id FROM field_definitions WHERE account_id = $1 AND module = $2 AND name = $3`,
			p.AccountID, in.Module, in.Name); err != nil {
			return nil, fmt.Errorf("find field %q: %w", in.Name, err)
		}
		value := strconv.FormatInt(existing, 10)
		e.Value = &value
	}
	if err != nil {
		return nil, err
	}
	return gen.FieldInsert200JSONResponse{Body: success(strconv.FormatInt(id, 10))}, nil
}

// FieldUpdate implements POST /field/update (admins): the title.
func (s *Server) FieldUpdate(ctx context.Context, req gen.FieldUpdateRequestObject) (gen.FieldUpdateResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := p.requireAdmin(); err != nil {
		return nil, err
	}
	in := req.Body
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		var old Field
		err := tx.GetContext(ctx, &old, `SELECT id, module, name, title, type FROM field_definitions
			WHERE account_id = $1 AND id = $2 FOR UPDATE`, p.AccountID, in.Id)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("field %d not found", in.Id)
		}
		if err != nil {
			return fmt.Errorf("read field %d: %w", in.Id, err)
		}
		if old.Title == in.Title {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE field_definitions SET title = $3 WHERE account_id = $1 AND id = $2`,
			p.AccountID, in.Id, in.Title); err != nil {
			return fmt.Errorf("update field %d: %w", in.Id, err)
		}
		return writeJournal(ctx, tx, p, []journalEntry{{old.Module, "field", in.Id, "update",
			map[string][2]any{"title": {old.Title, in.Title}}}})
	})
	if err != nil {
		return nil, err
	}
	return gen.FieldUpdate200JSONResponse{Body: success("1")}, nil
}

// FieldDelete implements POST /field/delete (admins).
func (s *Server) FieldDelete(ctx context.Context, req gen.FieldDeleteRequestObject) (gen.FieldDeleteResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := p.requireAdmin(); err != nil {
		return nil, err
	}
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		f, err := RemoveField(ctx, tx, p.AccountID, req.Body.Id)
		if err != nil {
			return err
		}
		return writeJournal(ctx, tx, p, []journalEntry{{f.Module, "field", f.ID, "delete",
			map[string]any{"module": f.Module, "name": f.Name, "title": f.Title, "type": f.Type}}})
	})
	if err != nil {
		return nil, err
	}
	return gen.FieldDelete200JSONResponse{Body: success("1")}, nil
}

// fieldValue checks a value of an additional field of type typ and returns it
// as stored in the record's extra column (JSON).
func fieldValue(name, typ string, raw json.RawMessage) (json.RawMessage, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, badRequest("values.%s: not a JSON value", name)
	}
	ok := false
	switch typ {
	case "text":
		_, ok = v.(string)
	case "number":
		_, ok = v.(float64)
	case "boolean":
		_, ok = v.(bool)
	case "date":
		if d, isText := v.(string); isText {
			_, err := time.Parse("2006-01-02", d)
			ok = err == nil
		}
	}
	if !ok {
		return nil, badRequest("values.%s: the field is of type %s", name, typ)
	}
	return raw, nil
}

// FieldValuesUpdate implements POST /field/values/update: the additional
// fields of a counterparty or deal the token owner sees.
func (s *Server) FieldValuesUpdate(ctx context.Context, req gen.FieldValuesUpdateRequestObject) (gen.FieldValuesUpdateResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	in := req.Body
	module := int(in.Module)
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		q := sqlFor(p)
		table, entity, alias := "companies c", "company", "c"
		var cond string
		if module == ModuleDeals {
			table, entity, alias = "deals d", "deal", "d"
			cond = "d.account_id = {acc} AND d.id = " + q.arg(in.Id) + " AND " + p.seesOwner("d.user_id")
		} else {
			cond = p.seesCompany(q.arg(in.Id))
		}
		var extraText string
		err = tx.GetContext(ctx, &extraText, q.expand(`SELECT `+alias+`.extra::text FROM `+table+` WHERE `+cond+` FOR NO KEY UPDATE`), q.args...)
		if errors.Is(err, sql.ErrNoRows) {
			if module == ModuleDeals {
				return notFound("deal %d not found", in.Id)
			}
			return companyNotFound(in.Id)
		}
		if err != nil {
			return fmt.Errorf("read %s %d: %w", entity, in.Id, err)
		}
		fields, err := ListFields(ctx, tx, p.AccountID, module)
		if err != nil {
			return err
		}
		types := map[string]string{}
		for _, f := range fields {
			types[f.Name] = f.Type
		}
		set := map[string]json.RawMessage{}
		values := deref2(in.Values)
		names := make([]string, 0, len(values))
		for name := range values {
			names = append(names, name)
		}
		for _, name := range deref(in.Remove) {
			if _, both := values[name]; both {
				return badRequest("remove.%s: also in values", name)
			}
			names = append(names, name)
		}
		slices.Sort(names)
		names = slices.Compact(names)
		for _, name := range names {
			typ, ok := types[name]
			if !ok {
				return badRequest("values.%s: no such additional field of module %d", name, module)
			}
			v, set1 := values[name]
			if !set1 {
				continue // removed below
			}
			raw, err := json.Marshal(v)
			if err != nil {
				return badRequest("values.%s: not a JSON value", name)
			}
			if set[name], err = fieldValue(name, typ, raw); err != nil {
				return err
			}
		}
		var extra map[string]json.RawMessage
		if err := json.Unmarshal([]byte(extraText), &extra); err != nil {
			return fmt.Errorf("extra of %s %d: %w", entity, in.Id, err)
		}
		changes := map[string][2]any{}
		for _, name := range names {
			old, had := extra[name]
			var oldV any
			if had {
				oldV = old
			}
			if v, ok := set[name]; ok {
				if had && jsonEqual(old, v) {
					continue
				}
				changes["ADD_"+name] = [2]any{oldV, v}
				extra[name] = v
			} else if had {
				changes["ADD_"+name] = [2]any{oldV, nil}
				delete(extra, name)
			}
		}
		if len(changes) == 0 {
			return nil
		}
		next, err := json.Marshal(extra)
		if err != nil {
			return fmt.Errorf("extra of %s %d: %w", entity, in.Id, err)
		}
		tableName := strings.Fields(table)[0]
		if _, err := tx.ExecContext(ctx, `UPDATE `+tableName+` SET extra = $3::jsonb, updated_at = now() WHERE account_id = $1 AND id = $2`,
			p.AccountID, in.Id, string(next)); err != nil {
			return fmt.Errorf("update %s %d: %w", entity, in.Id, err)
		}
		return writeJournal(ctx, tx, p, []journalEntry{{module, entity, in.Id, "update", changes}})
	})
	if err != nil {
		return nil, dbError(err)
	}
	return gen.FieldValuesUpdate200JSONResponse{Body: success("1")}, nil
}

// deref2 is the value of an optional map; an omitted one is empty.
func deref2(m *gen.FieldValues) gen.FieldValues {
	if m == nil {
		return nil
	}
	return *m
}

// jsonEqual compares two JSON texts by value.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// FilterList implements GET /filter/list.
func (s *Server) FilterList(ctx context.Context, req gen.FilterListRequestObject) (gen.FilterListResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	module := 0
	if req.Params.Module != nil {
		module = int(*req.Params.Module)
	}
	filters, err := ListFilters(ctx, s.db(ctx), p.AccountID, module)
	if err != nil {
		return nil, err
	}
	return gen.FilterList200JSONResponse(quickListOf(filters)), nil
}

// definitionJSON is the JSON text of a definition of a request.
func definitionJSON(d gen.FilterDefinition) (json.RawMessage, error) {
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, badRequest("definition: not a JSON object")
	}
	return raw, nil
}

// FilterInsert implements POST /filter/insert (admins).
func (s *Server) FilterInsert(ctx context.Context, req gen.FilterInsertRequestObject) (gen.FilterInsertResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := p.requireAdmin(); err != nil {
		return nil, err
	}
	def, err := definitionJSON(req.Body.Definition)
	if err != nil {
		return nil, err
	}
	in := FilterInput{AccountID: p.AccountID, Module: int(req.Body.Module), Name: req.Body.Name, Definition: def}
	var id int64
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		if id, err = AddFilter(ctx, tx, in); err != nil {
			return err
		}
		return writeJournal(ctx, tx, p, []journalEntry{{in.Module, "filter", id, "insert",
			map[string]any{"module": in.Module, "name": in.Name, "definition": in.Definition}}})
	})
	if err != nil {
		return nil, err
	}
	return gen.FilterInsert200JSONResponse{Body: success(strconv.FormatInt(id, 10))}, nil
}

// FilterUpdate implements POST /filter/update (admins).
func (s *Server) FilterUpdate(ctx context.Context, req gen.FilterUpdateRequestObject) (gen.FilterUpdateResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := p.requireAdmin(); err != nil {
		return nil, err
	}
	in := req.Body
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		var old Filter
		err := tx.GetContext(ctx, &old, `SELECT id, module, name, definition::text AS definition FROM user_filters
			WHERE account_id = $1 AND id = $2 FOR UPDATE`, p.AccountID, in.Id)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("filter %d not found", in.Id)
		}
		if err != nil {
			return fmt.Errorf("read ready filter %d: %w", in.Id, err)
		}
		changes := map[string][2]any{}
		name, def := old.Name, json.RawMessage(old.Definition)
		if in.Name != nil && *in.Name != old.Name {
			name = *in.Name
			changes["name"] = [2]any{old.Name, name}
		}
		if in.Definition != nil {
			raw, err := definitionJSON(*in.Definition)
			if err != nil {
				return err
			}
			if def, err = checkFilterDefinition(p.AccountID, old.Module, raw); err != nil {
				return err
			}
			if !jsonEqual(def, json.RawMessage(old.Definition)) {
				changes["definition"] = [2]any{old.Definition, def}
			}
		}
		if len(changes) == 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE user_filters SET name = $3, definition = $4::jsonb WHERE account_id = $1 AND id = $2`,
			p.AccountID, in.Id, name, string(def)); err != nil {
			return fmt.Errorf("update ready filter %d: %w", in.Id, err)
		}
		return writeJournal(ctx, tx, p, []journalEntry{{old.Module, "filter", in.Id, "update", changes}})
	})
	if err != nil {
		return nil, err
	}
	return gen.FilterUpdate200JSONResponse{Body: success("1")}, nil
}

// FilterDelete implements POST /filter/delete (admins).
func (s *Server) FilterDelete(ctx context.Context, req gen.FilterDeleteRequestObject) (gen.FilterDeleteResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := p.requireAdmin(); err != nil {
		return nil, err
	}
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		f, err := RemoveFilter(ctx, tx, p.AccountID, req.Body.Id)
		if err != nil {
			return err
		}
		return writeJournal(ctx, tx, p, []journalEntry{{f.Module, "filter", f.ID, "delete",
			map[string]any{"module": f.Module, "name": f.Name, "definition": f.Definition}}})
	})
	if err != nil {
		return nil, err
	}
	return gen.FilterDelete200JSONResponse{Body: success("1")}, nil
}

// jsonText is the JSON text of v, a value of plain structs, strings and numbers.
func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
