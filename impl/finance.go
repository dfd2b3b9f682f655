package impl

import (
	"context"

	"github.com/crmservice/crm/gen"
)

// FinanceList implements GET /finance/list.
func (s *Server) FinanceList(ctx context.Context, req gen.FinanceListRequestObject) (gen.FinanceListResponseObject, error) {
	return nil, errNotImplemented
}
