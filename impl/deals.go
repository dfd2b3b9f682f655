package impl

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/crmservice/crm/gen"
)

// dealRow is the stored state of a deal as the journal records it; numbers are
// kept in their decimal text.
type dealRow struct {
	Name       string         `db:"name" json:"name"`
	CompanyID  int64          `db:"company_id" json:"company_id"`
	ContactID  *int64         `db:"contact_id" json:"contact_id"`
	TypeID     int64          `db:"type_id" json:"type_id"`
	StatusID   int64          `db:"status_id" json:"status_id"`
	UserID     int64          `db:"user_id" json:"user_id"`
	DateStart  string         `db:"date_start" json:"date_start"`
	DateFinish string         `db:"date_finish" json:"date_finish"`
	Sum        string         `db:"sum" json:"-"`
	Note       string         `db:"note" json:"note"`
	Tags       pq.StringArray `db:"tags" json:"tags"`
}

// MarshalJSON writes the sum as the exact number it is.
func (r dealRow) MarshalJSON() ([]byte, error) {
	type plain dealRow
	return json.Marshal(struct {
		plain
		Sum json.RawMessage `json:"sum"`
	}{plain(r), json.RawMessage(r.Sum)})
}

// dealColumns reads a dealRow from the deals row d.
const dealColumns = `d.name, d.company_id, d.contact_id, d.type_id, d.status_id, d.user_id,
	to_char(d.date_start, 'YYYY-MM-DD') AS date_start, to_char(d.date_finish, 'YYYY-MM-DD') AS date_finish,
	d.sum::text AS sum, d.note, d.tags`

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
	err = s.callWrite(ctx, &out, `SELECT * FROM crm_deal_insert($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,
		$16, $17, $18, $19, $20, $21, $22, $23, $24, $25)`,
		p.callerArgs(sql.NullInt64{Int64: p.TokenID, Valid: p.TokenID != 0}, in.Name, in.CompanyId, in.ContactId, in.TypeId,
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
	if err := s.refuseInactiveUser(ctx, p, "user_id", in.UserId); err != nil {
		return nil, err
	}
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

	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		q := sqlFor(p)
		var old dealRow
		err := tx.GetContext(ctx, &old, q.expand(`SELECT `+dealColumns+` FROM deals d
			WHERE d.account_id = {acc} AND d.id = `+q.arg(in.Id)+` AND `+p.seesOwner("d.user_id")+` FOR UPDATE`), q.args...)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("deal %d not found", in.Id)
		}
		if err != nil {
			return fmt.Errorf("read deal %d: %w", in.Id, err)
		}

		next := old
		if companyID != nil && *companyID != old.CompanyID {
			if err := checkCompany(ctx, tx, p, *companyID); err != nil {
				return err
			}
			next.CompanyID = *companyID
			// The contact person belongs to the old counterparty; since 0 counts as
			// not passed, there would be no other way to take them off the deal.
			next.ContactID = nil
		}
		if contactID != nil {
			next.ContactID = contactID
		}
		setIf(&next.TypeID, typeID)
		setIf(&next.StatusID, statusID)
		setIf(&next.UserID, userID)
		setIf(&next.Name, in.Name)
		setIf(&next.Note, in.Note)
		if sum != nil {
			next.Sum = string(*sum)
		}
		if in.DateStart != nil {
			next.DateStart = in.DateStart.String()
		}
		if in.DateFinish != nil {
			next.DateFinish = in.DateFinish.String()
		}
		if in.Tags != nil {
			next.Tags = splitTags(*in.Tags)
		}

		var stored dealRow
		err = tx.QueryRowxContext(ctx, `
			WITH d AS (
				UPDATE deals AS d SET name = $3, company_id = $4, contact_id = $5, type_id = $6, status_id = $7, user_id = $8,
					date_start = $9::date, date_finish = $10::date, sum = $11::numeric, note = $12, tags = $13, updated_at = now()
				 WHERE d.account_id = $1 AND d.id = $2
				RETURNING *)
			SELECT `+dealColumns+` FROM d`,
			p.AccountID, in.Id, next.Name, next.CompanyID, next.ContactID, next.TypeID, next.StatusID, next.UserID,
			next.DateStart, next.DateFinish, next.Sum, next.Note, next.Tags,
		).StructScan(&stored)
		if code, constraint := violation(err); code == "23503" && slices.Contains(dealLinkFKs, constraint) {
			return badRequest("company_id: the deal has tasks, documents, money movements or mail of its counterparty, so it cannot move to another")
		}
		if err != nil {
			return fmt.Errorf("update deal %d: %w", in.Id, err)
		}
		return writeJournal(ctx, tx, p, []journalEntry{{ModuleDeals, "deal", in.Id, "update", dealChanges(old, stored)}})
	})
	if err != nil {
		return nil, dbError(err)
	}
	return gen.DealUpdate200JSONResponse{Body: success("1")}, nil
}

func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// dealChanges maps each field that differs between two states of a deal to its
// [old, new] values.
func dealChanges(old, cur dealRow) map[string][2]any {
	changes := map[string][2]any{}
	add := func(field string, changed bool, o, n any) {
		if changed {
			changes[field] = [2]any{o, n}
		}
	}
	add("name", old.Name != cur.Name, old.Name, cur.Name)
	add("company_id", old.CompanyID != cur.CompanyID, old.CompanyID, cur.CompanyID)
	add("contact_id", !equalPtr(old.ContactID, cur.ContactID), old.ContactID, cur.ContactID)
	add("type_id", old.TypeID != cur.TypeID, old.TypeID, cur.TypeID)
	add("status_id", old.StatusID != cur.StatusID, old.StatusID, cur.StatusID)
	add("user_id", old.UserID != cur.UserID, old.UserID, cur.UserID)
	add("date_start", old.DateStart != cur.DateStart, old.DateStart, cur.DateStart)
	add("date_finish", old.DateFinish != cur.DateFinish, old.DateFinish, cur.DateFinish)
	add("sum", old.Sum != cur.Sum, json.RawMessage(old.Sum), json.RawMessage(cur.Sum))
	add("note", old.Note != cur.Note, old.Note, cur.Note)
	add("tags", !slices.Equal(old.Tags, cur.Tags), []string(old.Tags), []string(cur.Tags))
	return changes
}

func equalPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// isZeroCents reports whether a sum is 0 once rounded to cents, as the deals
// table stores it: such a sum counts as 0, and so as not passed.
func isZeroCents(n json.Number) bool {
	r, ok := new(big.Rat).SetString(string(n))
	return ok && r.Abs(r).Cmp(big.NewRat(1, 200)) < 0
}
