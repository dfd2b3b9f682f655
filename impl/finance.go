package impl

import (
	"context"
	"fmt"

	"github.com/crmservice/crm/gen"
)

// FinanceList implements GET /finance/list: the visible money movements of a
// counterparty and/or a deal, latest date first.
func (s *Server) FinanceList(ctx context.Context, req gen.FinanceListRequestObject) (gen.FinanceListResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	q := sqlFor(p)
	if err := byCompanyOrDeal(q, "m", req.Params.CompanyId, req.Params.DealId); err != nil {
		return nil, err
	}
	q.set("visible", p.seesOwner("m.user_id"))
	env, err := s.quickList(ctx, q, `
		SELECT count(*) AS rows,
		       coalesce(jsonb_agg(jsonb_build_object(
		           'id', m.id, 'date', to_char(m.date, 'YYYY-MM-DD'), 'sum', m.sum, 'sum_currency', m.sum_currency,
		           'direction_id', m.direction, 'direction', CASE m.direction WHEN 1 THEN 'income' ELSE 'expense' END,
		           'type_id', m.type_id, 'type', coalesce(dt.name, ''), 'category_id', m.category_id,
		           'category', coalesce(dc.name, ''), 'account_id', m.money_account_id, 'account', ma.name,
		           'currency', ma.currency::text, 'note', m.note, 'user_id', m.user_id, 'user_name', coalesce(u.name, ''),
		           'company_id', m.company_id, 'company_name', coalesce(CASE WHEN {c_seen} THEN c.name END, ''), 'deal_id', m.deal_id,
		           'tags', array_to_string(m.tags, ','))
		         ORDER BY m.date DESC, m.id DESC), '[]')::text AS value
		  FROM money_movements m
		  JOIN money_accounts ma ON ma.account_id = {acc} AND ma.id = m.money_account_id
		  LEFT JOIN companies c ON c.account_id = {acc} AND c.id = m.company_id
		  LEFT JOIN users u ON u.account_id = {acc} AND u.id = m.user_id
		  LEFT JOIN directory_values dt ON dt.account_id = {acc} AND dt.id = m.type_id
		  LEFT JOIN directory_values dc ON dc.account_id = {acc} AND dc.id = m.category_id
		 WHERE m.account_id = {acc} AND {byCompanyOrDeal} AND c.deleted_at IS NULL AND {visible}`)
	if err != nil {
		return nil, fmt.Errorf("list money movements: %w", err)
	}
	return gen.FinanceList200JSONResponse(env), nil
}
