package impl

import (
	"context"
	"fmt"

	"github.com/crmservice/crm/gen"
)

// DocumentList implements GET /document/list: the visible documents of a
// counterparty and/or a deal, latest date first.
func (s *Server) DocumentList(ctx context.Context, req gen.DocumentListRequestObject) (gen.DocumentListResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	q := sqlFor(p)
	if err := byCompanyOrDeal(q, "doc", req.Params.CompanyId, req.Params.DealId); err != nil {
		return nil, err
	}
	q.set("visible", p.seesOwner("doc.user_id"))
	env, err := s.quickList(ctx, q, `
		SELECT count(*) AS rows,
		       coalesce(jsonb_agg(jsonb_build_object(
		           'id', doc.id, 'number', doc.number, 'date', to_char(doc.date, 'YYYY-MM-DD'), 'sum', doc.sum,
		           'type_id', doc.type_id, 'type', coalesce(dt.name, ''), 'status_id', doc.status_id,
		           'status', coalesce(ds.name, ''), 'note', doc.note, 'user_id', doc.user_id, 'user_name', coalesce(u.name, ''),
		           'company_id', doc.company_id, 'company_name', CASE WHEN {c_seen} THEN c.name ELSE '' END, 'deal_id', doc.deal_id, 'deal', coalesce(d.name, ''),
		           'contact_id', doc.contact_id, 'date_expire', to_char(doc.date_expire, 'YYYY-MM-DD'),
		           'external_code', doc.external_code, 'tags', array_to_string(doc.tags, ','))
		         ORDER BY doc.date DESC, doc.id DESC), '[]')::text AS value
		  FROM documents doc
		  JOIN companies c ON c.account_id = {acc} AND c.id = doc.company_id
		  LEFT JOIN deals d ON d.account_id = {acc} AND d.id = doc.deal_id
		  LEFT JOIN users u ON u.account_id = {acc} AND u.id = doc.user_id
		  LEFT JOIN directory_values dt ON dt.account_id = {acc} AND dt.id = doc.type_id
		  LEFT JOIN directory_values ds ON ds.account_id = {acc} AND ds.id = doc.status_id
		 WHERE doc.account_id = {acc} AND {byCompanyOrDeal} AND c.deleted_at IS NULL AND {visible}`)
	if err != nil {
		return nil, fmt.Errorf("list documents: %w", err)
	}
	return gen.DocumentList200JSONResponse(env), nil
}
