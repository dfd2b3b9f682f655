package impl

import (
	"context"

	"github.com/crmservice/crm/gen"
)

// DocumentList implements GET /document/list.
func (s *Server) DocumentList(ctx context.Context, req gen.DocumentListRequestObject) (gen.DocumentListResponseObject, error) {
	return nil, errNotImplemented
}
