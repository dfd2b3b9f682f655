package impl

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/crmservice/crm/gen"
)

// SocialNetwork is a social network of a contact person.
type SocialNetwork struct {
	ID      int64  `db:"id" json:"id"`
	Network string `db:"network" json:"network"`
	Address string `db:"address" json:"address"`
}

// socialPair is a network without its id, as the journal records it.
type socialPair struct {
	Network string `json:"network"`
	Address string `json:"address"`
}

// SetContactSocials replaces the social networks of the contact person
// contactID of account with networks (network names lower-cased, a pair given
// twice kept once) and returns them as stored, with the journal's record of
// the change (nil when nothing changed). The caller has checked that the
// contact person exists and may be changed.
func SetContactSocials(ctx context.Context, tx *sqlx.Tx, accountID, contactID int64, networks []SocialNetwork) ([]SocialNetwork, map[string][2]any, error) {
	var old []SocialNetwork
	if err := tx.SelectContext(ctx, &old, `SELECT id, network, address FROM contact_socials
		WHERE account_id = $1 AND contact_id = $2 ORDER BY id`, accountID, contactID); err != nil {
		return nil, nil, fmt.Errorf("read social networks of contact %d: %w", contactID, err)
	}
	var want []socialPair
	for _, n := range networks {
		pair := socialPair{strings.ToLower(strings.TrimSpace(n.Network)), strings.TrimSpace(n.Address)}
		if pair.Network == "" || pair.Address == "" {
			return nil, nil, badRequest("SocialNetworks: network and address must not be empty")
		}
		if !slices.Contains(want, pair) {
			want = append(want, pair)
		}
	}
	had := make([]socialPair, len(old))
	for i, n := range old {
		had[i] = socialPair{n.Network, n.Address}
	}
	if slices.Equal(had, want) {
		return append([]SocialNetwork{}, old...), nil, nil
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM contact_socials WHERE account_id = $1 AND contact_id = $2`, accountID, contactID); err != nil {
		return nil, nil, fmt.Errorf("clear social networks of contact %d: %w", contactID, err)
	}
	stored := []SocialNetwork{}
	for _, pair := range want {
		n := SocialNetwork{Network: pair.Network, Address: pair.Address}
		if err := tx.GetContext(ctx, &n.ID, `INSERT INTO contact_socials (account_id, contact_id, network, address)
			VALUES ($1, $2, $3, $4) RETURNING id`, accountID, contactID, n.Network, n.Address); err != nil {
			return nil, nil, fmt.Errorf("insert social network of contact %d: %w", contactID, err)
		}
		stored = append(stored, n)
	}
	if want == nil {
		want = []socialPair{}
	}
	return stored, map[string][2]any{"SocialNetworks": {had, want}}, nil
}

// ContactSocialSet implements POST /contact/social/set: whoever sees the
// contact person's counterparty may set its networks, as its phones.
func (s *Server) ContactSocialSet(ctx context.Context, req gen.ContactSocialSetRequestObject) (gen.ContactSocialSetResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	in := req.Body
	networks := make([]SocialNetwork, len(in.SocialNetworks))
	for i, n := range in.SocialNetworks {
		networks[i] = SocialNetwork{Network: n.Network, Address: n.Address}
	}
	var stored []SocialNetwork
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		q := sqlFor(p)
		q.set("visible", p.seesOwner("c.user_id"))
		var found bool
		// The contact's row lock serialises two replacements of its networks.
		err := tx.GetContext(ctx, &found, q.expand(`
			SELECT true FROM contacts ct
			  JOIN companies c ON c.account_id = {acc} AND c.id = ct.company_id
			 WHERE ct.account_id = {acc} AND ct.id = `+q.arg(in.ContactId)+` AND c.deleted_at IS NULL AND {visible}
			   FOR NO KEY UPDATE OF ct`), q.args...)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("contact person %d not found", in.ContactId)
		}
		if err != nil {
			return fmt.Errorf("find contact %d: %w", in.ContactId, err)
		}
		var changes map[string][2]any
		if stored, changes, err = SetContactSocials(ctx, tx, p.AccountID, in.ContactId, networks); err != nil || changes == nil {
			return err
		}
		return writeJournal(ctx, tx, p, []journalEntry{{ModuleCompanies, "contact", in.ContactId, "update", changes}})
	})
	if err != nil {
		return nil, dbError(err)
	}
	return gen.ContactSocialSet200JSONResponse{Body: success(jsonText(stored))}, nil
}

// SetContactSocialsAdmin replaces the social networks of the contact person
// contactID of account, as crm-server contact-social set does (no journal).
func SetContactSocialsAdmin(ctx context.Context, db *sqlx.DB, accountID, contactID int64, networks []SocialNetwork) error {
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	var found bool
	err = tx.GetContext(ctx, &found, `SELECT true FROM contacts WHERE account_id = $1 AND id = $2 FOR NO KEY UPDATE`, accountID, contactID)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("account %d has no contact person %d", accountID, contactID)
	}
	if err != nil {
		return fmt.Errorf("find contact %d: %w", contactID, err)
	}
	if _, _, err := SetContactSocials(ctx, tx, accountID, contactID, networks); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
