package impl

import (
	"context"
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
