// Package demo owns the demo data set: a generated account of a small office
// supplier with its staff, counterparties, deals, tasks, documents, money and
// mail, loaded once into a database by Load. It writes through SQL of its own,
// beside the server in package impl, whose tokens and constants it uses.
package demo

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/crmservice/crm/impl"
)

// AccountName is the name of the demo account; Load creates it only once.
const AccountName = "Demo: Baltic Office Supply"

const (
	demoLockKey    = 0x43524d64656d6f // "CRMdemo" in ASCII
	demoSeedHi     = 0x4352_4d64
	demoSeedLo     = 0x656d_6f31
	demoTimeZone   = "Europe/Riga"
	demoCurrency   = "EUR"
	demoAdminLogin = "anna@demo.example"
	// demoMemberLogin is a member without KPI plans and KPI report rights.
	demoMemberLogin = "tomas@demo.example"
	demoTokenLabel  = "demo"
	demoTokenTTL    = 30 * 24 * time.Hour
	demoUSDPer100   = 108 // USD per 100 EUR for the USD money account

	demoCompanyCount  = 300
	demoDealCount     = 120
	demoTaskCount     = 600
	demoDocumentCount = 200
	demoMovementCount = 400
	demoIncomeCount   = 230
	demoTransferCount = 5
	demoMailCount     = 150
)

// Demo describes the demo account.
type Demo struct {
	AccountID     int64
	AdminUserID   int64
	MailAccountID int64  // the demo admin's mail account (POST /mail/send needs one of the token owner)
	Created       bool   // false when the account existed already
	Token         string // a new bearer token of the demo admin user
	// MemberToken is a new bearer token of a demo member without KPI plans and
	// KPI report rights, for what such a user is answered (conformance cases).
	MemberToken string
	Samples     Samples
}

// Samples are records of the demo account that the conformance cases read
// and add goods positions to, since the API can neither list nor create them:
// an active catalogue item, and a document with goods positions whose deal has
// money movements, with its counterparty and deal.
type Samples struct {
	GoodsID    int64
	CompanyID  int64
	DealID     int64
	DocumentID int64
}

// Load creates the demo account, unless it exists, and issues new tokens of
// its admin user and of a member (valid 30 days, label "demo", or the label of
// ReplacingTokens, which also revokes the ones it issued before). now anchors
// all dates. With WithProgress it reports how far it is while it runs.
func Load(ctx context.Context, db *sqlx.DB, now time.Time, opts ...Option) (*Demo, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	createRows := 0
	for _, s := range createSteps() {
		createRows += s.rows
	}
	t := newTracker(o)
	t.at("waiting for the lock", 0, createRows+tokenRows)
	t.run()
	demo, err := load(ctx, db, now, t, createRows, o)
	t.stop(err == nil)
	return demo, err
}

// tokenRows are the rows of the tokens that every load issues.
const tokenRows = 2

func load(ctx context.Context, db *sqlx.DB, now time.Time, t *tracker, createRows int, o options) (*Demo, error) {
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("demo: begin: %w", err)
	}
	defer tx.Rollback()
	// accounts.name is not unique, so only the lock keeps two loads from both
	// seeing no demo account and creating one each.
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, demoLockKey); err != nil {
		return nil, fmt.Errorf("demo: lock: %w", err)
	}
	t.at("finding the demo account", 0, createRows+tokenRows)
	demo, found, err := findDemo(ctx, tx)
	if err != nil {
		return nil, err
	}
	if !found {
		if demo, err = createDemo(ctx, tx, now, t); err != nil {
			return nil, err
		}
	}
	t.at("issuing tokens", tokenRows, 0)
	var memberID int64
	if err := tx.GetContext(ctx, &memberID, `SELECT id FROM users WHERE account_id = $1 AND lower(login) = $2`,
		demo.AccountID, demoMemberLogin); err != nil {
		return nil, fmt.Errorf("demo: find the member %s: %w", demoMemberLogin, err)
	}
	label := demoTokenLabel
	if o.label != "" {
		label = o.label
	}
	if o.revoke {
		if _, err := tx.ExecContext(ctx, `
			UPDATE tokens SET revoked_at = now()
			 WHERE account_id = $1 AND user_id IN ($2, $3) AND label = $4
			   AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`,
			demo.AccountID, demo.AdminUserID, memberID, label); err != nil {
			return nil, fmt.Errorf("demo: revoke the earlier tokens: %w", err)
		}
	}
	if demo.Token, err = issueDemoToken(ctx, tx, demo.AccountID, demo.AdminUserID, label, now); err != nil {
		return nil, err
	}
	t.add(1)
	if demo.MemberToken, err = issueDemoToken(ctx, tx, demo.AccountID, memberID, label, now); err != nil {
		return nil, err
	}
	t.add(1)
	if demo.Samples, err = findSamples(ctx, tx, demo.AccountID); err != nil {
		return nil, err
	}
	if err := tx.GetContext(ctx, &demo.MailAccountID, `
		SELECT coalesce(min(id), 0) FROM mail_accounts WHERE account_id = $1 AND user_id = $2`, demo.AccountID, demo.AdminUserID); err != nil {
		return nil, fmt.Errorf("demo: find the admin's mail account: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("demo: commit: %w", err)
	}
	return demo, nil
}

// findDemo returns the existing demo account with its admin user; found is
// false when there is none.
func findDemo(ctx context.Context, tx *sqlx.Tx) (demo *Demo, found bool, err error) {
	var accountID int64
	// cross-account: the demo account is known only by its name until it is
	// found; an admin step that runs once per load.
	err = tx.GetContext(ctx, &accountID, `SELECT id FROM accounts WHERE name = $1 ORDER BY id LIMIT 1`, AccountName)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("demo: find account: %w", err)
	}
	var adminID int64
	err = tx.GetContext(ctx, &adminID, `
		SELECT id FROM users WHERE account_id = $1 AND role = $2
		 ORDER BY lower(login) = $3 DESC, id LIMIT 1`, accountID, impl.RoleAdmin, demoAdminLogin)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, fmt.Errorf("demo: account %d has no admin user", accountID)
	}
	if err != nil {
		return nil, false, fmt.Errorf("demo: find the admin of account %d: %w", accountID, err)
	}
	return &Demo{AccountID: accountID, AdminUserID: adminID}, true, nil
}

// findSamples picks the sample records: the first of each kind by id, so
// that every load of the same demo data picks the same ones.
func findSamples(ctx context.Context, tx *sqlx.Tx, accountID int64) (Samples, error) {
	var s Samples
	err := tx.QueryRowContext(ctx, `
		SELECT (SELECT min(g.id) FROM goods g WHERE g.account_id = $1 AND g.active), d.company_id, d.deal_id, d.id
		  FROM documents d
		 WHERE d.account_id = $1 AND d.deal_id IS NOT NULL
		   AND EXISTS (SELECT 1 FROM document_goods p WHERE p.account_id = $1 AND p.document_id = d.id)
		   AND EXISTS (SELECT 1 FROM money_movements m
		                WHERE m.account_id = $1 AND m.company_id = d.company_id AND m.deal_id = d.deal_id)
		 ORDER BY d.id
		 LIMIT 1`, accountID).Scan(&s.GoodsID, &s.CompanyID, &s.DealID, &s.DocumentID)
	if err != nil {
		return s, fmt.Errorf("demo: find sample records: %w", err)
	}
	return s, nil
}

func issueDemoToken(ctx context.Context, tx *sqlx.Tx, accountID, userID int64, label string, now time.Time) (string, error) {
	token, hash := impl.NewToken(accountID)
	_, err := tx.ExecContext(ctx, `
		INSERT INTO tokens (account_id, user_id, hash, label, expires_at) VALUES ($1, $2, $3, $4, $5)`,
		accountID, userID, hash, label, now.Add(demoTokenTTL))
	if err != nil {
		return "", fmt.Errorf("demo: issue token: %w", err)
	}
	return token, nil
}
