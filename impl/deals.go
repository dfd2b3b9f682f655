package impl

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"

	"github.com/lib/pq"

	"github.com/crmservice/crm/gen"
)

// DealInsert implements POST /deal/insert: the deal and its goods positions in
// one transaction. The counterparty must be one the token owner sees.
func (s *Server) DealInsert(ctx context.Context, req gen.DealInsertRequestObject) (gen.DealInsertResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	in := req.Body
	items := deref(in.Goods)
	goods := make([]sql.NullInt64, len(items))
	var descriptions, codes, notes []sql.NullString
	numbers := make([][]sql.NullString, 4) // qnt, price, discount, vat
	text := func(v *string) sql.NullString {
		if v == nil {
			return sql.NullString{}
		}
		return sql.NullString{String: *v, Valid: true}
	}
	for i, it := range items {
		if it.GoodsId != nil {
			goods[i] = sql.NullInt64{Int64: *it.GoodsId, Valid: true}
		}
		descriptions, codes, notes = append(descriptions, text(it.Discription)), append(codes, text(it.Code)), append(notes, text(it.Note))
		for c, n := range []*json.Number{it.Qnt, it.Price, it.Discount, it.Vat} {
			numbers[c] = append(numbers[c], text(decimal(n)))
		}
	}
	var out struct {
		Error sql.NullString `db:"o_error"`
		Index sql.NullInt64  `db:"o_index"`
		ID    sql.NullInt64  `db:"o_id"`
	}
	// crm_deal_insert (db/functions/deal_insert.sql): the checks of the
	// responsible user, the counterparty and the goods, the deal, its
	// positions and their journal in one call.
	err = s.callWrite(ctx, &out, "*", "crm_deal_insert",
		p.writerArgs(in.Name, in.CompanyId, in.ContactId, in.TypeId,
			in.StatusId, in.UserId, in.DateStart.String(), in.DateFinish.String(), decimal(in.Sum), str(in.Note),
			splitTags(str(in.Tags)), pq.Array(goods), pq.Array(descriptions), pq.Array(codes), pq.Array(numbers[0]),
			pq.Array(numbers[1]), pq.Array(numbers[2]), pq.Array(numbers[3]), pq.Array(notes))...)
	if err != nil {
		return nil, dbError(fmt.Errorf("insert deal: %w", err))
	}
	switch out.Error.String {
	case "inactive":
		return nil, badRequest("user_id: user %d is deactivated", in.UserId)
	case "company":
		return nil, companyNotFound(in.CompanyId)
	case "goods":
		return nil, badRequest("Goods.%d.goods_id: goods %d not found in the catalogue", out.Index.Int64, *items[out.Index.Int64].GoodsId)
	case "discription":
		return nil, badRequest("Goods.%d.discription: required for a position without goods_id", out.Index.Int64)
	}
	id := out.ID.Int64
	return gen.DealInsert200JSONResponse{Body: success(strconv.FormatInt(id, 10))}, nil
}

// dealLinkFKs are the foreign keys through which tasks, documents, money
// movements and mail point at a deal together with its counterparty.
var dealLinkFKs = []string{"tasks_deal_fk", "documents_deal_fk", "money_movements_company_deal_fk", "mail_messages_company_deal_fk"}

// DealUpdate implements POST /deal/update.
func (s *Server) DealUpdate(ctx context.Context, req gen.DealUpdateRequestObject) (gen.DealUpdateResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	in := req.Body
	// "A numeric field equal to 0 counts as not passed, so a sum cannot be set to zero."
	nonZero := func(v *int64) *int64 {
		if v == nil || *v == 0 {
			return nil
		}
		return v
	}
	companyID, contactID := nonZero(in.CompanyId), nonZero(in.ContactId)
	typeID, statusID, userID := nonZero(in.TypeId), nonZero(in.StatusId), nonZero(in.UserId)
	sum := in.Sum
	if sum != nil && isZeroCents(*sum) {
		sum = nil
	}
	if companyID == nil && contactID == nil && typeID == nil && statusID == nil && userID == nil && sum == nil &&
		in.Name == nil && in.DateStart == nil && in.DateFinish == nil && in.Note == nil && in.Tags == nil {
		return nil, badRequest(`request body: at least one field besides "id" is required (a numeric field equal to 0 counts as not passed)`)
	}

	set := map[string]any{}
	for name, v := range map[string]*int64{"company_id": companyID, "contact_id": contactID, "type_id": typeID,
		"status_id": statusID, "user_id": userID} {
		if v != nil {
			set[name] = *v
		}
	}
	for name, v := range map[string]*string{"name": in.Name, "note": in.Note} {
		if v != nil {
			set[name] = *v
		}
	}
	if sum != nil {
		set["sum"] = string(*sum)
	}
	if in.DateStart != nil {
		set["date_start"] = in.DateStart.String()
	}
	if in.DateFinish != nil {
		set["date_finish"] = in.DateFinish.String()
	}
	if in.Tags != nil {
		set["tags"] = []string(splitTags(*in.Tags))
	}
	body, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("update deal %d: %w", in.Id, err)
	}
	var refused sql.NullString
	// crm_deal_update (db/functions/deal_update.sql): the checks of the
	// responsible user, the deal and a new counterparty, the row and the
	// journal row of what changed in one call.
	err = s.callWrite(ctx, &refused, "o_error", "crm_deal_update",
		p.writerArgs(userID != nil, in.Id, string(body))...)
	if code, constraint := violation(err); code == "23503" && slices.Contains(dealLinkFKs, constraint) {
		return nil, badRequest("company_id: the deal has tasks, documents, money movements or mail of its counterparty, so it cannot move to another")
	}
	if err != nil {
		return nil, dbError(fmt.Errorf("update deal %d: %w", in.Id, err))
	}
	switch refused.String {
	case "inactive":
		return nil, badRequest("user_id: user %d is deactivated", *userID)
	case "deal":
		return nil, notFound("deal %d not found", in.Id)
	case "company":
		return nil, companyNotFound(*companyID)
	}
	return gen.DealUpdate200JSONResponse{Body: success("1")}, nil
}

// isZeroCents reports whether a sum is 0 once rounded to cents, as the deals
// table stores it: such a sum counts as 0, and so as not passed.
func isZeroCents(n json.Number) bool {
	r, ok := new(big.Rat).SetString(string(n))
	return ok && r.Abs(r).Cmp(big.NewRat(1, 200)) < 0
}
