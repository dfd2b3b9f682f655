package impl

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// refuseInactiveUser is the one check that a user id given as the responsible
// user or assignee of a record names an active user: a deactivated user keeps
// their records but gets no new ones ("400" naming the field). An id that is
// no user of the account is left to the foreign key (its own "400"); nil or 0
// (not passed) passes.
func (s *Server) refuseInactiveUser(ctx context.Context, p *Principal, field string, id *int64) error {
	if id == nil || *id == 0 {
		return nil
	}
	var active bool
	err := s.db(ctx).GetContext(ctx, &active, `SELECT active FROM users WHERE account_id = $1 AND id = $2`, p.AccountID, *id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("look up user %d: %w", *id, err)
	case !active:
		return badRequest("%s: user %d is deactivated", field, *id)
	}
	return nil
}
