package impl

import (
	"context"

	"github.com/crmservice/crm/gen"
)

// DealGoodsList implements GET /deal/goods/list.
func (s *Server) DealGoodsList(ctx context.Context, req gen.DealGoodsListRequestObject) (gen.DealGoodsListResponseObject, error) {
	return nil, errNotImplemented
}

// DealGoodsInsert implements POST /deal/goods/insert.
func (s *Server) DealGoodsInsert(ctx context.Context, req gen.DealGoodsInsertRequestObject) (gen.DealGoodsInsertResponseObject, error) {
	return nil, errNotImplemented
}

// DealGoodsUpdate implements POST /deal/goods/update.
func (s *Server) DealGoodsUpdate(ctx context.Context, req gen.DealGoodsUpdateRequestObject) (gen.DealGoodsUpdateResponseObject, error) {
	return nil, errNotImplemented
}

// DocumentGoodsList implements GET /document/goods/list.
func (s *Server) DocumentGoodsList(ctx context.Context, req gen.DocumentGoodsListRequestObject) (gen.DocumentGoodsListResponseObject, error) {
	return nil, errNotImplemented
}

// DocumentGoodsInsert implements POST /document/goods/insert.
func (s *Server) DocumentGoodsInsert(ctx context.Context, req gen.DocumentGoodsInsertRequestObject) (gen.DocumentGoodsInsertResponseObject, error) {
	return nil, errNotImplemented
}
