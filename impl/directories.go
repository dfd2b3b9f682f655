package impl

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/crmservice/crm/gen"
)

// Directory codes: the first four come from the interface, the others are this
// server's (openapi.yaml, GET /directory/{code}).
const (
	DirCompanyTypes      = 9
	DirCompanyStatuses   = 10
	DirCompanyCategories = 29
	DirTaskKinds         = 35
	DirDealTypes         = 40
	DirDealStages        = 41
	DirPositions         = 42
	DirContactStatuses   = 43
	DirDocumentTypes     = 44
	DirDocumentStatuses  = 45
	DirPaymentForms      = 46
	DirMoneyCategories   = 47
	DirAgents            = 48
	DirCompanyGroups     = 49
)

// directoryNames are the directories by code, with the names GET
// /directory/list gives them, in the order of their codes.
var directoryNames = []struct {
	code int
	name string
}{
	{DirCompanyTypes, "Counterparty types"},
	{DirCompanyStatuses, "Counterparty statuses"},
	{DirCompanyCategories, "Counterparty categories"},
	{DirTaskKinds, "Kinds of tasks"},
	{DirDealTypes, "Deal types"},
	{DirDealStages, "Deal stages"},
	{DirPositions, "Positions of contact persons"},
	{DirContactStatuses, "Statuses of contact persons"},
	{DirDocumentTypes, "Document types"},
	{DirDocumentStatuses, "Document statuses"},
	{DirPaymentForms, "Payment forms"},
	{DirMoneyCategories, "Income and expense items"},
	{DirAgents, "Agents"},
	{DirCompanyGroups, "Counterparty groups"},
}

// DirectoryList implements GET /directory/list: every directory with its
// code, its name and the number of its active values in the account.
func (s *Server) DirectoryList(ctx context.Context, req gen.DirectoryListRequestObject) (gen.DirectoryListResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	var counts []struct {
		Code   int `db:"directory_code"`
		Values int `db:"n"`
	}
	err = s.db(ctx).SelectContext(ctx, &counts, `
		SELECT directory_code, count(*) AS n FROM directory_values
		 WHERE account_id = $1 AND active GROUP BY directory_code`, p.AccountID)
	if err != nil {
		return nil, fmt.Errorf("count directory values: %w", err)
	}
	byCode := make(map[int]int, len(counts))
	for _, c := range counts {
		byCode[c.Code] = c.Values
	}
	type entry struct {
		Code   int    `json:"code"`
		Name   string `json:"name"`
		Values int    `json:"values"`
	}
	out := make([]entry, len(directoryNames))
	for i, d := range directoryNames {
		out[i] = entry{Code: d.code, Name: d.name, Values: byCode[d.code]}
	}
	value, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("directory list: %w", err)
	}
	return gen.DirectoryList200JSONResponse(successList(string(value), len(out), 1, len(out))), nil
}

// DirectoryGet implements GET /directory/{code}.
func (s *Server) DirectoryGet(ctx context.Context, req gen.DirectoryGetRequestObject) (gen.DirectoryGetResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	var out struct {
		Rows  int    `db:"rows"`
		Value string `db:"value"`
	}
	err = s.db(ctx).GetContext(ctx, &out, `
		SELECT count(*) AS rows,
		       coalesce(jsonb_agg(jsonb_build_object('ID', id, 'NAME', name) ORDER BY sort, name, id), '[]') AS value
		  FROM directory_values
		 WHERE account_id = $1 AND directory_code = $2 AND active`,
		p.AccountID, int(req.Code))
	if err != nil {
		return nil, fmt.Errorf("read directory %d: %w", req.Code, err)
	}
	return gen.DirectoryGet200JSONResponse(successList(out.Value, out.Rows, quickPage(out.Rows), out.Rows)), nil
}

// positionID returns the id of the position named name in the positions
// directory, compared case-insensitively, adding it when new ("a new value is
// added to the directory automatically"). ON CONFLICT DO UPDATE, unlike DO
// NOTHING, returns the row even when a concurrent transaction added it first.
func positionID(ctx context.Context, tx *sqlx.Tx, accountID int64, name string) (int64, error) {
	var id int64
	err := tx.GetContext(ctx, &id, `
		INSERT INTO directory_values (account_id, directory_code, name) VALUES ($1, $2, $3)
		ON CONFLICT (account_id, directory_code, lower(name)) DO UPDATE SET active = true
		RETURNING id`, accountID, DirPositions, name)
	if err != nil {
		return 0, fmt.Errorf("position %q: %w", name, err)
	}
	return id, nil
}
