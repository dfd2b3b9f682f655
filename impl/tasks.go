package impl

import (
	"context"

	"github.com/crmservice/crm/gen"
)

// TaskInsert implements POST /task/insert.
func (s *Server) TaskInsert(ctx context.Context, req gen.TaskInsertRequestObject) (gen.TaskInsertResponseObject, error) {
	return nil, errNotImplemented
}

// TaskList implements GET /task/list.
func (s *Server) TaskList(ctx context.Context, req gen.TaskListRequestObject) (gen.TaskListResponseObject, error) {
	return nil, errNotImplemented
}
