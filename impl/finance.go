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
	args := sqlArgs{}
	where, err := companyOrDeal("m", p.AccountID, req.Params.CompanyId, req.Params.DealId, &args)
	if err != nil {
		return nil, err
	}
	query := fmt.Sprintf(`
		SELECT count(*) AS rows,
		       coalesce(jsonb_agg(jsonb_build_object(
		           'id', m.id, 'date', to_char(m.date, 'YYYY-MM-DD'), 'sum', m.sum, 'sum_currency', m.sum_currency,
		           'direction_id', m.direction, 'direction', CASE m.direction WHEN 1 THEN 'income' ELSE 'expense' END,
		           'type_id', m.type_id, 'type', coalesce(dt.name, ''), 'category_id', m.category_id,
		           'category', coalesce(dc.name, ''), 'account_id', m.money_account_id, 'account', ma.name,
		           'currency', ma.currency::text, 'note', m.note, 'user_id', m.user_id, 'user_name', coalesce(u.name, ''),
		           'company_id', m.company_id, 'company_name', coalesce(c.name, ''), 'deal_id', m.deal_id,
		           'tags', array_to_string(m.tags, ','))
		         ORDER BY m.date DESC, m.id DESC), '[]')::text AS value
		  FROM money_movements m
		  JOIN money_accounts ma ON ma.account_id = m.account_id AND ma.id = m.money_account_id
		  LEFT JOIN companies c ON c.account_id = m.account_id AND c.id = m.company_id
		  LEFT JOIN users u ON u.account_id = m.account_id AND u.id = m.user_id
		  LEFT JOIN directory_values dt ON dt.account_id = m.account_id AND dt.id = m.type_id
		  LEFT JOIN directory_values dc ON dc.account_id = m.account_id AND dc.id = m.category_id
		 WHERE %s AND c.deleted_at IS NULL AND %s`,
		where, p.responsibleFilter("m.user_id", &args))
	env, err := s.quickList(ctx, query, args)
	if err != nil {
		return nil, fmt.Errorf("list money movements: %w", err)
	}
	return gen.FinanceList200JSONResponse(env), nil
}
