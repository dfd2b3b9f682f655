package impl

import (
	"context"

	"github.com/crmservice/crm/gen"
)

// DealInsert implements POST /deal/insert.
func (s *Server) DealInsert(ctx context.Context, req gen.DealInsertRequestObject) (gen.DealInsertResponseObject, error) {
	return nil, errNotImplemented
}

// DealUpdate implements POST /deal/update.
func (s *Server) DealUpdate(ctx context.Context, req gen.DealUpdateRequestObject) (gen.DealUpdateResponseObject, error) {
	return nil, errNotImplemented
}
