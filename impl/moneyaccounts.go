package impl

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// MoneyAccount is a money account (a bank account or cash desk) of an account.
type MoneyAccount struct {
	ID       int64  `db:"id" json:"id"`
	Name     string `db:"name" json:"name"`
	Currency string `db:"currency" json:"currency"`
	Active   bool   `db:"active" json:"active"`
}

// CreateMoneyAccount adds a money account in currency (three capital letters)
// and returns its id.
func CreateMoneyAccount(ctx context.Context, db sqlx.QueryerContext, accountID int64, name, currency string) (int64, error) {
	var id int64
	err := sqlx.GetContext(ctx, db, &id, `INSERT INTO money_accounts (account_id, name, currency) VALUES ($1, $2, $3) RETURNING id`,
		accountID, name, currency)
	if err != nil {
		return 0, adminDBError("create money account", err, map[string]*Error{
			"money_accounts_account_id_fkey": noAccount(accountID),
			"money_accounts_name_check":      badRequest("a money account needs a name"),
			"money_accounts_currency_check":  badRequest("currency %q: three capital letters (ISO 4217), such as EUR", currency),
			sqlStateTooLong:                  badRequest("currency %q: three capital letters (ISO 4217), such as EUR", currency),
		})
	}
	return id, nil
}

// ListMoneyAccounts returns the money accounts of an account by name.
func ListMoneyAccounts(ctx context.Context, db sqlx.QueryerContext, accountID int64) ([]MoneyAccount, error) {
	out := []MoneyAccount{}
	if err := sqlx.SelectContext(ctx, db, &out, `SELECT id, name, currency::text AS currency, active FROM money_accounts
		WHERE account_id = $1 ORDER BY name, id`, accountID); err != nil {
		return nil, fmt.Errorf("list money accounts: %w", err)
	}
	return out, nil
}
