package impl

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/crmservice/crm/gen"
)

// documentRow holds the fields of a new document; its json form is the
// journal's record of the insert.
type documentRow struct {
	Number       string         `json:"number,omitempty"`
	Date         string         `json:"date"`
	Sum          string         `json:"sum"`
	TypeID       int64          `json:"type_id"`
	StatusID     *int64         `json:"status_id,omitempty"`
	Note         string         `json:"note,omitempty"`
	UserID       int64          `json:"user_id"`
	CompanyID    int64          `json:"company_id"`
	DealID       *int64         `json:"deal_id,omitempty"`
	ContactID    *int64         `json:"contact_id,omitempty"`
	DateExpire   *string        `json:"date_expire,omitempty"`
	ExternalCode string         `json:"external_code,omitempty"`
	Tags         pq.StringArray `json:"tags,omitempty"`
}

// DocumentInsert implements POST /document/insert: a document of a
// counterparty the token owner sees, with the fields of the document list.
func (s *Server) DocumentInsert(ctx context.Context, req gen.DocumentInsertRequestObject) (gen.DocumentInsertResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	in := req.Body
	if err := s.refuseInactiveUser(ctx, p, "user_id", in.UserId); err != nil {
		return nil, err
	}
	row := documentRow{
		Number: str(in.Number), Date: in.Date.String(), Sum: "0", TypeID: in.TypeId, StatusID: in.StatusId,
		Note: str(in.Note), UserID: p.UserID, CompanyID: in.CompanyId, DealID: in.DealId, ContactID: in.ContactId,
		ExternalCode: str(in.ExternalCode), Tags: splitTags(str(in.Tags)),
	}
	if in.Sum != nil {
		row.Sum = string(*in.Sum)
	}
	if in.UserId != nil {
		row.UserID = *in.UserId
	}
	if in.DateExpire != nil {
		d := in.DateExpire.String()
		if d < row.Date {
			return nil, badRequest("date_expire: must not be before date")
		}
		row.DateExpire = &d
	}
	var id int64
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		if err := checkCompany(ctx, tx, p, row.CompanyID); err != nil {
			return err
		}
		if row.DealID != nil {
			if err := checkDealOfCompany(ctx, tx, p, *row.DealID, row.CompanyID); err != nil {
				return err
			}
		}
		var sum string
		err := tx.QueryRowContext(ctx, `
			WITH d AS (
				INSERT INTO documents (account_id, number, date, sum, type_id, status_id, note, user_id, company_id, deal_id,
					contact_id, date_expire, external_code, tags, created_by)
				VALUES ($1, $2, $3, $4::numeric, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
				RETURNING id, sum)
			SELECT id, sum::text FROM d`,
			p.AccountID, row.Number, row.Date, row.Sum, row.TypeID, row.StatusID, row.Note, row.UserID, row.CompanyID,
			row.DealID, row.ContactID, row.DateExpire, row.ExternalCode, row.Tags, p.UserID).Scan(&id, &sum)
		if err != nil {
			return fmt.Errorf("insert document: %w", err)
		}
		row.Sum = sum // as stored: rounded to cents
		return writeJournal(ctx, tx, p, []journalEntry{{ModuleDocuments, "document", id, "insert", row}})
	})
	if err != nil {
		return nil, dbError(err)
	}
	return gen.DocumentInsert200JSONResponse{Body: success(strconv.FormatInt(id, 10))}, nil
}
