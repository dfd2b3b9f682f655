package impl

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/crmservice/crm/gen"
	"github.com/crmservice/crm/impl/mailer"
)

// Mail accounts are created, listed with their state and disabled by the
// server binary; the API lists them (GET /mail/accounts, an extension: "the
// methods that list ... mail accounts: not shown") without their servers. Like
// the other admin operations these do not write the journal.

// MailServerInput is the SMTP or IMAP side of a new mail account.
type MailServerInput struct {
	Host     string // "" when the account does not send (SMTP) or is not polled (IMAP)
	Port     int    // 0: 587 for SMTP, 993 for IMAP
	Security string // none, starttls or tls; "": starttls for SMTP, tls for IMAP
	Login    string // "": the address when a password is given (SMTP without login sends unauthenticated)
	Password string // encrypted with the server key before it is stored
}

// MailAccountInput describes a new mail account of a user.
type MailAccountInput struct {
	UserID      int64
	Address     string
	DisplayName string
	SMTP, IMAP  MailServerInput
}

// CreateMailAccount creates a mail account and returns its id. Passwords are
// sealed with box, which may be nil only when no password is given.
func CreateMailAccount(ctx context.Context, db *sqlx.DB, box *mailer.SecretBox, in MailAccountInput) (int64, error) {
	if !mailer.ValidAddress(in.Address) {
		return 0, errors.New("create mail account: the address must be of the form local@domain.tld (ASCII, no spaces)")
	}
	if strings.ContainsAny(in.DisplayName, "\r\n") {
		return 0, errors.New("create mail account: the display name must not contain line breaks")
	}
	smtp, err := mailServer("SMTP", in.SMTP, in.Address, 587, "starttls", box)
	if err != nil {
		return 0, err
	}
	imap, err := mailServer("IMAP", in.IMAP, in.Address, 993, "tls", box)
	if err != nil {
		return 0, err
	}
	if imap.Host != "" && imap.Password == "" {
		return 0, errors.New("create mail account: IMAP needs a password")
	}
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("create mail account: %w", err)
	}
	defer tx.Rollback()
	u, err := findUser(ctx, tx, in.UserID)
	if err != nil {
		return 0, err
	}
	if !u.Active {
		return 0, badRequest("user %d is deactivated", in.UserID)
	}
	accountID := u.AccountID
	seal := func(use, password string) []byte {
		if password == "" {
			return nil
		}
		return box.Seal(accountID, use, password)
	}
	var id int64
	err = tx.GetContext(ctx, &id, `
		INSERT INTO mail_accounts (account_id, user_id, address, display_name,
			smtp_host, smtp_port, smtp_security, smtp_login, smtp_secret,
			imap_host, imap_port, imap_security, imap_login, imap_secret)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
		RETURNING id`,
		accountID, in.UserID, in.Address, strings.TrimSpace(in.DisplayName),
		smtp.Host, smtp.Port, smtp.Security, smtp.Login, seal("smtp", smtp.Password),
		imap.Host, imap.Port, imap.Security, imap.Login, seal("imap", imap.Password))
	if err != nil {
		return 0, adminDBError("create mail account", err, nil)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("create mail account: %w", err)
	}
	return id, nil
}

// mailServer checks one side of a new mail account and fills in its defaults.
func mailServer(what string, in MailServerInput, address string, port int, security string, box *mailer.SecretBox) (MailServerInput, error) {
	if in.Port == 0 {
		in.Port = port
	}
	if in.Security == "" {
		in.Security = security
	}
	switch {
	case in.Port < 1 || in.Port > 65535:
		return in, fmt.Errorf("create mail account: %s port %d is not 1 to 65535", what, in.Port)
	case in.Security != "none" && in.Security != "starttls" && in.Security != "tls":
		return in, fmt.Errorf("create mail account: %s security %q is not none, starttls or tls", what, in.Security)
	case in.Host == "" && (in.Login != "" || in.Password != ""):
		return in, fmt.Errorf("create mail account: %s login or password without a host", what)
	case in.Password != "" && box == nil:
		return in, fmt.Errorf("create mail account: %w", mailer.ErrNoSecretKey)
	case in.Password != "" && mailer.ExposesPassword(in.Security, in.Host):
		return in, fmt.Errorf("create mail account: the %s password would cross the network unencrypted: use starttls or tls", what)
	}
	if in.Login == "" && in.Password != "" {
		in.Login = address
	}
	return in, nil
}

// MailAccount is a mail account as the admin list shows it: never its passwords,
// only whether it has them.
type MailAccount struct {
	ID              int64      `db:"id"`
	UserID          int64      `db:"user_id"`
	UserName        string     `db:"user_name"`
	Address         string     `db:"address"`
	DisplayName     string     `db:"display_name"`
	SMTP            string     `db:"smtp"` // security://login@host:port
	SMTPPassword    bool       `db:"smtp_password"`
	IMAP            string     `db:"imap"`
	IMAPPassword    bool       `db:"imap_password"`
	Active          bool       `db:"active"`
	Queued          int        `db:"queued"`
	Failed          int        `db:"failed"`
	IMAPPolledAt    *time.Time `db:"imap_polled_at"`
	IMAPLastError   string     `db:"imap_last_error"`
	IMAPLastUID     int64      `db:"imap_last_uid"`
	IMAPUIDValidity *int64     `db:"imap_uidvalidity"`
}

// ListMailAccounts lists the mail accounts of an account with their state:
// messages waiting in the outbox, messages that failed, the last poll.
func ListMailAccounts(ctx context.Context, db *sqlx.DB, accountID int64) ([]MailAccount, error) {
	var exists bool
	if err := db.GetContext(ctx, &exists, `SELECT EXISTS (SELECT FROM accounts WHERE id = $1)`, accountID); err != nil {
		return nil, adminDBError("list mail accounts", err, nil)
	}
	if !exists {
		return nil, noAccount(accountID)
	}
	out := []MailAccount{}
	err := db.SelectContext(ctx, &out, `
		SELECT a.id, a.user_id, u.name AS user_name, a.address, a.display_name,
		       CASE WHEN a.smtp_host = '' THEN '' ELSE a.smtp_security || '://' || a.smtp_login || '@' || a.smtp_host || ':' || a.smtp_port END AS smtp,
		       a.smtp_secret IS NOT NULL AS smtp_password,
		       CASE WHEN a.imap_host = '' THEN '' ELSE a.imap_security || '://' || a.imap_login || '@' || a.imap_host || ':' || a.imap_port END AS imap,
		       a.imap_secret IS NOT NULL AS imap_password,
		       a.active,
		       (SELECT count(*) FROM mail_messages m WHERE m.account_id = $1 AND m.mail_account_id = a.id
		           AND m.delivery_state IN ('queued', 'sending')) AS queued,
		       (SELECT count(*) FROM mail_messages m WHERE m.account_id = $1 AND m.mail_account_id = a.id
		           AND m.delivery_state = 'failed') AS failed,
		       a.imap_polled_at, a.imap_last_error, a.imap_last_uid, a.imap_uidvalidity
		  FROM mail_accounts a
		  JOIN users u ON u.account_id = $1 AND u.id = a.user_id
		 WHERE a.account_id = $1
		 ORDER BY a.id`, accountID)
	if err != nil {
		return nil, adminDBError("list mail accounts", err, nil)
	}
	return out, nil
}

// DisableMailAccount disables a mail account: it is no longer polled, sends
// nothing more (its queued messages fail), and POST /mail/send refuses it.
func DisableMailAccount(ctx context.Context, db *sqlx.DB, id int64) error {
	var accountID int64
	// cross-account: admin lookup by id
	err := db.GetContext(ctx, &accountID, `SELECT account_id FROM mail_accounts WHERE id = $1`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("no mail account %d", id)
	}
	if err != nil {
		return adminDBError("find mail account", err, nil)
	}
	res, err := db.ExecContext(ctx, `UPDATE mail_accounts SET active = false WHERE account_id = $1 AND id = $2 AND active`, accountID, id)
	if err != nil {
		return adminDBError("disable mail account", err, nil)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("disable mail account: %w", err)
	} else if n == 0 {
		return conflict("mail account %d is already disabled", id)
	}
	return nil
}

// MailAccounts implements GET /mail/accounts: the mail accounts whose
// messages the token owner sees (those of the users whose records they see),
// without their servers or secrets, by address.
func (s *Server) MailAccounts(ctx context.Context, req gen.MailAccountsRequestObject) (gen.MailAccountsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	q := sqlFor(p)
	q.set("visible", p.seesOwner("mb.user_id"))
	env, err := s.quickList(ctx, q, `
		SELECT count(*) AS rows,
		       coalesce(jsonb_agg(jsonb_build_object('id', mb.id, 'user_id', mb.user_id, 'user_name', u.name,
		           'address', mb.address, 'display_name', mb.display_name, 'active', mb.active)
		         ORDER BY mb.address, mb.id), '[]')::text AS value
		  FROM mail_accounts mb
		  JOIN users u ON u.account_id = {acc} AND u.id = mb.user_id
		 WHERE mb.account_id = {acc} AND {visible}`)
	if err != nil {
		return nil, fmt.Errorf("list mail accounts: %w", err)
	}
	return gen.MailAccounts200JSONResponse(env), nil
}
