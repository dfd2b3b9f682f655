package impl

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/crmservice/crm/gen"
)

// CompanyDelete implements POST /company/delete: a soft delete. The
// counterparty keeps its rows and its deals, tasks, documents, money and mail;
// deleted_at hides it from the card (status Error), the lists, the dashboards
// and the duplicate check, and stops anything new from being attached to it
// (every such check reads seesCompany, which keeps only live counterparties).
func (s *Server) CompanyDelete(ctx context.Context, req gen.CompanyDeleteRequestObject) (gen.CompanyDeleteResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	id := req.Body.Id
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		q := sqlFor(p)
		var name string
		err := tx.GetContext(ctx, &name, q.expand(`
			WITH d AS (UPDATE companies c SET deleted_at = now(), updated_at = now()
			            WHERE `+p.seesCompany(q.arg(id))+` RETURNING c.name)
			SELECT name FROM d`), q.args...)
		if errors.Is(err, sql.ErrNoRows) {
			return companyNotFound(id)
		}
		if err != nil {
			return fmt.Errorf("delete counterparty %d: %w", id, err)
		}
		return writeJournal(ctx, tx, p, []journalEntry{{ModuleCompanies, "company", id, "delete", map[string]any{"name": name}}})
	})
	if err != nil {
		return nil, dbError(err)
	}
	return gen.CompanyDelete200JSONResponse{Body: success("1")}, nil
}
