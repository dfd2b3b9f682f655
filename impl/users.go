package impl

import (
	"context"
	"fmt"

	"github.com/crmservice/crm/gen"
)

// UserMe implements GET /user/me: the token owner, with their department's
// name, the time zone the token reads and writes date-times in, and the
// account's base currency.
func (s *Server) UserMe(ctx context.Context, req gen.UserMeRequestObject) (gen.UserMeResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	q := sqlFor(p)
	var value string
	err = s.db(ctx).GetContext(ctx, &value, q.expand(`
		SELECT jsonb_build_object('id', u.id, 'name', u.name, 'role', u.role, 'department_id', u.department_id,
		           'department', coalesce(d.name, ''), 'time_zone', {tz}::text,
		           'kpi_users_report', u.kpi_users_report, 'kpi_departments_report', u.kpi_departments_report,
		           'base_currency', `+q.arg(p.BaseCurrency)+`::text)::text
		  FROM users u
		  LEFT JOIN departments d ON d.account_id = {acc} AND d.id = u.department_id
		 WHERE u.account_id = {acc} AND u.id = {me}`), q.args...)
	if err != nil {
		return nil, fmt.Errorf("read user %d: %w", p.UserID, err)
	}
	return gen.UserMe200JSONResponse(success(value)), nil
}

// UserList implements GET /user/list: the users whose records the token
// owner sees (seesUser), by name.
func (s *Server) UserList(ctx context.Context, req gen.UserListRequestObject) (gen.UserListResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	q := sqlFor(p)
	q.set("visible", p.seesUser("u"))
	env, err := s.quickList(ctx, q, `
		SELECT count(*) AS rows,
		       coalesce(jsonb_agg(jsonb_build_object('id', u.id, 'name', u.name, 'role', u.role,
		           'department_id', u.department_id, 'department', coalesce(d.name, ''), 'active', u.active)
		         ORDER BY u.name, u.id), '[]')::text AS value
		  FROM users u
		  LEFT JOIN departments d ON d.account_id = {acc} AND d.id = u.department_id
		 WHERE u.account_id = {acc} AND {visible}`)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	return gen.UserList200JSONResponse(env), nil
}
