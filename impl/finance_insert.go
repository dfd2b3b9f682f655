package impl

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/crmservice/crm/gen"
)

// movementRow holds the fields of a new money movement; its json form is the
// journal's record of the insert.
type movementRow struct {
	Date           string         `json:"date"`
	Sum            string         `json:"sum"`
	SumCurrency    string         `json:"sum_currency"`
	Direction      int            `json:"direction_id"`
	TypeID         *int64         `json:"type_id,omitempty"`
	CategoryID     *int64         `json:"category_id,omitempty"`
	MoneyAccountID int64          `json:"account_id"`
	IsTransfer     bool           `json:"is_transfer"`
	Note           string         `json:"note,omitempty"`
	UserID         int64          `json:"user_id"`
	CompanyID      *int64         `json:"company_id,omitempty"`
	DealID         *int64         `json:"deal_id,omitempty"`
	Tags           pq.StringArray `json:"tags,omitempty"`
}

// moneyAccount is what a movement needs of its money account.
type moneyAccount struct {
	Currency string `db:"currency"`
	Base     string `db:"base_currency"`
	Active   bool   `db:"active"`
}

// FinanceInsert implements POST /finance/insert: an income or expense, or a
// transfer between two money accounts of the account (an expense and an income
// marked as transfers, which dashboards do not count).
func (s *Server) FinanceInsert(ctx context.Context, req gen.FinanceInsertRequestObject) (gen.FinanceInsertResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	in := req.Body
	if err := s.refuseInactiveUser(ctx, p, "user_id", in.UserId); err != nil {
		return nil, err
	}
	transfer := in.ToAccountId != nil
	switch {
	case transfer && *in.ToAccountId == in.AccountId:
		return nil, badRequest("to_account_id: a transfer needs another money account than account_id")
	case transfer && in.DirectionId != nil:
		return nil, badRequest("direction_id: not allowed with to_account_id (a transfer is an expense and an income)")
	case transfer && (in.CompanyId != nil || in.DealId != nil || in.CategoryId != nil):
		return nil, badRequest("company_id, deal_id and category_id are not allowed with to_account_id (a transfer between own money accounts)")
	case !transfer && in.DirectionId == nil:
		return nil, badRequest("direction_id: required (1 income, 2 expense) unless to_account_id is given")
	case !transfer && in.ToSumCurrency != nil:
		return nil, badRequest("to_sum_currency: only with to_account_id")
	}
	base := movementRow{
		Date: in.Date.String(), Sum: string(in.Sum), TypeID: in.TypeId, CategoryID: in.CategoryId,
		Note: str(in.Note), UserID: p.UserID, CompanyID: in.CompanyId, DealID: in.DealId, Tags: splitTags(str(in.Tags)),
		IsTransfer: transfer,
	}
	if in.UserId != nil {
		base.UserID = *in.UserId
	}
	var ids []int64
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		if base.CompanyID != nil {
			if err := checkCompany(ctx, tx, p, *base.CompanyID); err != nil {
				return err
			}
		}
		if base.DealID != nil {
			company, err := dealCompany(ctx, tx, p, *base.DealID)
			if errors.Is(err, sql.ErrNoRows) || err == nil && base.CompanyID != nil && company != *base.CompanyID {
				return badRequest("deal_id: no such deal of this counterparty")
			}
			if err != nil {
				return err
			}
		}
		var rows []movementRow
		first := base
		first.MoneyAccountID = in.AccountId
		if first.SumCurrency, err = sumInCurrency(ctx, tx, p, "account_id", "sum_currency", in.AccountId, in.Sum, in.SumCurrency); err != nil {
			return err
		}
		if !transfer {
			first.Direction = int(*in.DirectionId)
			rows = append(rows, first)
		} else {
			first.Direction = 2
			second := base
			second.Direction, second.MoneyAccountID = 1, *in.ToAccountId
			if second.SumCurrency, err = sumInCurrency(ctx, tx, p, "to_account_id", "to_sum_currency", *in.ToAccountId, in.Sum, in.ToSumCurrency); err != nil {
				return err
			}
			rows = append(rows, first, second)
		}
		var journal []journalEntry
		for _, r := range rows {
			var id int64
			err := tx.QueryRowContext(ctx, `
				WITH m AS (
					INSERT INTO money_movements (account_id, date, sum, sum_currency, direction, type_id, category_id,
						money_account_id, is_transfer, note, user_id, company_id, deal_id, tags, created_by)
					VALUES ($1, $2, $3::numeric, $4::numeric, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
					RETURNING id, sum, sum_currency)
				SELECT id, sum::text, sum_currency::text FROM m`,
				p.AccountID, r.Date, r.Sum, r.SumCurrency, r.Direction, r.TypeID, r.CategoryID, r.MoneyAccountID,
				r.IsTransfer, r.Note, r.UserID, r.CompanyID, r.DealID, r.Tags, p.UserID).Scan(&id, &r.Sum, &r.SumCurrency)
			if err != nil {
				return fmt.Errorf("insert money movement: %w", err)
			}
			ids = append(ids, id)
			journal = append(journal, journalEntry{ModuleFinance, "money_movement", id, "insert", r})
		}
		return writeJournal(ctx, tx, p, journal)
	})
	if err != nil {
		return nil, dbError(err)
	}
	value, _ := json.Marshal(ids)
	return gen.FinanceInsert200JSONResponse{Body: success(string(value))}, nil
}

// sumInCurrency checks the money account id (named field) and returns the
// amount in its currency: given, or the base amount when the money account is
// in the base currency (then a given one must be equal).
func sumInCurrency(ctx context.Context, tx *sqlx.Tx, p *Principal, field, currencyField string, id int64, sum json.Number,
	given *json.Number) (string, error) {
	q := sqlFor(p)
	var ma moneyAccount
	err := tx.GetContext(ctx, &ma, q.expand(`
		SELECT ma.currency, a.base_currency, ma.active
		  FROM money_accounts ma JOIN accounts a ON a.id = {acc}
		 WHERE ma.account_id = {acc} AND ma.id = `+q.arg(id)), q.args...)
	if errors.Is(err, sql.ErrNoRows) || err == nil && !ma.Active {
		return "", badRequest("%s: no such active money account", field)
	}
	if err != nil {
		return "", fmt.Errorf("read money account %d: %w", id, err)
	}
	if ma.Currency != ma.Base {
		if given == nil {
			return "", badRequest("%s: required, money account %d is in %s and the base currency is %s", currencyField, id, ma.Currency, ma.Base)
		}
		return string(*given), nil
	}
	if given != nil {
		var equal bool
		if err := tx.GetContext(ctx, &equal, `SELECT round($1::numeric, 2) = round($2::numeric, 2)`, string(*given), string(sum)); err != nil {
			return "", fmt.Errorf("compare amounts: %w", err)
		}
		if !equal {
			return "", badRequest("%s: must equal sum, money account %d is in the base currency %s", currencyField, id, ma.Base)
		}
	}
	return string(sum), nil
}

// FinanceAccounts implements GET /finance/accounts: the money accounts of the
// account, seen whole by every role as the goods catalogue is.
func (s *Server) FinanceAccounts(ctx context.Context, req gen.FinanceAccountsRequestObject) (gen.FinanceAccountsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	env, err := s.quickList(ctx, sqlFor(p), `
		SELECT count(*) AS rows,
		       coalesce(jsonb_agg(jsonb_build_object('id', ma.id, 'name', ma.name, 'currency', ma.currency::text, 'active', ma.active)
		                ORDER BY ma.name, ma.id), '[]')::text AS value
		  FROM money_accounts ma WHERE ma.account_id = {acc}`)
	if err != nil {
		return nil, fmt.Errorf("list money accounts: %w", err)
	}
	return gen.FinanceAccounts200JSONResponse(env), nil
}
