package impl

import (
	"context"

	"github.com/crmservice/crm/gen"
)

// CommonListPaging implements POST /common/list/paging/{module}.
func (s *Server) CommonListPaging(ctx context.Context, req gen.CommonListPagingRequestObject) (gen.CommonListPagingResponseObject, error) {
	return nil, errNotImplemented
}
