package impl

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/crmservice/crm/gen"
)

// positionTable describes the goods positions of deals or of documents.
type positionTable struct {
	table      string // deal_goods, document_goods
	owner      string // the owner's column: deal_id, document_id
	ownerTable string // deals, documents
	ownerName  string // deal, document (in error texts)
	module     int    // the owner's module, under which the journal files positions
}

var (
	dealPositions     = positionTable{"deal_goods", "deal_id", "deals", "deal", ModuleDeals}
	documentPositions = positionTable{"document_goods", "document_id", "documents", "document", ModuleDocuments}
)

// json is the reply object of the position row g: quantities, discounts and VAT
// rates with their significant decimals only, prices and sums with cents.
func (pt positionTable) json(g string) string {
	return `jsonb_build_object('id', ` + g + `.id, '` + pt.owner + `', ` + g + `.` + pt.owner + `, 'goods_id', ` + g + `.goods_id,
		'discription', ` + g + `.description, 'code', ` + g + `.code, 'qnt', trim_scale(` + g + `.qnt), 'price', ` + g + `.price,
		'discount', trim_scale(` + g + `.discount), 'vat', trim_scale(` + g + `.vat), 'sum', ` + g + `.sum, 'note', ` + g + `.note)`
}

// slots sets the names of the table, its owner and the owner's table:
// {positions}, {owner}, {owners}.
func (pt positionTable) slots(q *sqlText) {
	q.set("positions", pt.table)
	q.set("owner", pt.owner)
	q.set("owners", pt.ownerTable)
}

// position is a new goods position; decimals are kept in their exact text.
type position struct {
	GoodsID                   sql.NullInt64
	Description, Code, Note   string
	Qnt, Price, Discount, Vat string
}

// catalogueGoods is an active item of the goods catalogue.
type catalogueGoods struct {
	ID    int64  `db:"id"`
	Name  string `db:"name"`
	Code  string `db:"code"`
	Qnt   string `db:"qnt"`
	Price string `db:"price"`
	Vat   string `db:"vat"`
}

// position is a new position of the goods as the catalogue describes it:
// "quantity and price taken from the catalog", with its name, code and VAT.
func (g catalogueGoods) position() position {
	return position{GoodsID: sql.NullInt64{Int64: g.ID, Valid: true}, Description: g.Name, Code: g.Code,
		Qnt: g.Qnt, Price: g.Price, Discount: "0", Vat: g.Vat}
}

// catalogue returns the active catalogue goods of the account among ids; the
// others (unknown, of another account, withdrawn) are simply absent.
func catalogue(ctx context.Context, tx *sqlx.Tx, accountID int64, ids []int64) (map[int64]catalogueGoods, error) {
	out := map[int64]catalogueGoods{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []catalogueGoods
	err := tx.SelectContext(ctx, &rows, `
		SELECT id, name, code, qnt::text AS qnt, price::text AS price, vat::text AS vat
		  FROM goods WHERE account_id = $1 AND id = ANY ($2) AND active`, accountID, pq.Array(ids))
	if err != nil {
		return nil, fmt.Errorf("read goods catalogue: %w", err)
	}
	for _, g := range rows {
		out[g.ID] = g
	}
	return out, nil
}

// insertPositions inserts positions of one deal or document in the order given,
// in one statement, and returns their journal entries.
func insertPositions(ctx context.Context, tx *sqlx.Tx, pt positionTable, accountID, ownerID int64, ps []position) ([]journalEntry, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	goodsIDs := make([]sql.NullInt64, len(ps))
	cols := make([][]string, 7)
	for i, p := range ps {
		goodsIDs[i] = p.GoodsID
		for c, v := range []string{p.Description, p.Code, p.Qnt, p.Price, p.Discount, p.Vat, p.Note} {
			cols[c] = append(cols[c], v)
		}
	}
	var rows []struct {
		ID   int64  `db:"id"`
		JSON string `db:"json"`
	}
	q := newSQL()
	pt.slots(q)
	q.set("json", pt.json("g"))
	// The JSON is built over the inserted rows, not in RETURNING: a distributed
	// table (Citus) returns only immutable expressions of a row.
	err := tx.SelectContext(ctx, &rows, q.expand(`
		WITH g AS (
			INSERT INTO {positions} (account_id, {owner}, goods_id, description, code, qnt, price, discount, vat, note)
			SELECT `+q.arg(accountID)+`, `+q.arg(ownerID)+`, gid, d, c, q::numeric, p::numeric, dc::numeric, v::numeric, n
			  FROM unnest(`+q.arg(pq.Array(goodsIDs))+`::bigint[], `+q.arg(pq.Array(cols[0]))+`::text[], `+q.arg(pq.Array(cols[1]))+`::text[],
			              `+q.arg(pq.Array(cols[2]))+`::text[], `+q.arg(pq.Array(cols[3]))+`::text[], `+q.arg(pq.Array(cols[4]))+`::text[],
			              `+q.arg(pq.Array(cols[5]))+`::text[], `+q.arg(pq.Array(cols[6]))+`::text[])
			       WITH ORDINALITY AS u (gid, d, c, q, p, dc, v, n, i)
			 ORDER BY i
			RETURNING *)
		SELECT g.id, {json}::text AS json FROM g`), q.args...)
	if err != nil {
		return nil, fmt.Errorf("insert %s positions: %w", pt.ownerName, err)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].ID < rows[j].ID })
	entries := make([]journalEntry, len(rows))
	for i, r := range rows {
		entries[i] = journalEntry{pt.module, pt.table, r.ID, "insert", json.RawMessage(r.JSON)}
	}
	return entries, nil
}

// listPositions answers the positions of one visible deal or document, in the
// order they were added; a missing or invisible owner is "not found".
func (s *Server) listPositions(ctx context.Context, pt positionTable, ownerID int64) (gen.Envelope, error) {
	p, err := principal(ctx)
	if err != nil {
		return gen.Envelope{}, err
	}
	q := sqlFor(p)
	pt.slots(q)
	q.set("json", pt.json("g"))
	q.bind("id", ownerID)
	q.set("visible", p.seesOwner("o.user_id"))
	env, err := s.quickList(ctx, q, `
		SELECT count(g.id) AS rows,
		       coalesce(jsonb_agg({json} ORDER BY g.id) FILTER (WHERE g.id IS NOT NULL), '[]')::text AS value
		  FROM {owners} o
		  LEFT JOIN {positions} g ON g.account_id = {acc} AND g.{owner} = o.id
		 WHERE o.account_id = {acc} AND o.id = {id} AND {visible}
		 GROUP BY o.id`)
	if errors.Is(err, sql.ErrNoRows) {
		return gen.Envelope{}, notFound("%s %d not found", pt.ownerName, ownerID)
	}
	if err != nil {
		return gen.Envelope{}, fmt.Errorf("list positions of %s %d: %w", pt.ownerName, ownerID, err)
	}
	return env, nil
}

// insertCatalogueGoods adds one position per id of goodsIDs (comma-separated,
// repeats allowed) to a visible deal or document, all or nothing.
func (s *Server) insertCatalogueGoods(ctx context.Context, pt positionTable, ownerID int64, goodsIDs string) error {
	p, err := principal(ctx)
	if err != nil {
		return err
	}
	var ids []int64
	for _, f := range strings.Split(goodsIDs, ",") {
		id, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return badRequest("goods_ids: %s is not an id", f)
		}
		ids = append(ids, id)
	}
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		q := sqlFor(p)
		pt.slots(q)
		var one int
		err := tx.GetContext(ctx, &one, q.expand(`SELECT 1 FROM {owners} o WHERE o.account_id = {acc} AND o.id = `+
			q.arg(ownerID)+` AND `+p.seesOwner("o.user_id")), q.args...)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("%s %d not found", pt.ownerName, ownerID)
		}
		if err != nil {
			return fmt.Errorf("look up %s %d: %w", pt.ownerName, ownerID, err)
		}
		goods, err := catalogue(ctx, tx, p.AccountID, ids)
		if err != nil {
			return err
		}
		var missing []string
		ps := make([]position, 0, len(ids))
		for _, id := range ids {
			g, ok := goods[id]
			if !ok {
				if m := strconv.FormatInt(id, 10); !slices.Contains(missing, m) {
					missing = append(missing, m)
				}
				continue
			}
			ps = append(ps, g.position())
		}
		if len(missing) > 0 {
			return notFound("goods_ids: goods %s not found in the catalogue", strings.Join(missing, ", "))
		}
		entries, err := insertPositions(ctx, tx, pt, p.AccountID, ownerID, ps)
		if err != nil {
			return err
		}
		return writeJournal(ctx, tx, p, entries)
	})
	return dbError(err)
}

// DealGoodsList implements GET /deal/goods/list.
func (s *Server) DealGoodsList(ctx context.Context, req gen.DealGoodsListRequestObject) (gen.DealGoodsListResponseObject, error) {
	env, err := s.listPositions(ctx, dealPositions, req.Params.DealId)
	if err != nil {
		return nil, err
	}
	return gen.DealGoodsList200JSONResponse(env), nil
}

// DealGoodsInsert implements POST /deal/goods/insert.
func (s *Server) DealGoodsInsert(ctx context.Context, req gen.DealGoodsInsertRequestObject) (gen.DealGoodsInsertResponseObject, error) {
	if err := s.insertCatalogueGoods(ctx, dealPositions, req.Params.DealId, req.Params.GoodsIds); err != nil {
		return nil, err
	}
	return gen.DealGoodsInsert200JSONResponse{Body: success("1")}, nil
}

// DealGoodsUpdate implements POST /deal/goods/update: only the passed fields of
// the one position change (0 is a value here: the "0 counts as not passed" of
// the deal update is not said of positions); the deal sum stays as it is.
func (s *Server) DealGoodsUpdate(ctx context.Context, req gen.DealGoodsUpdateRequestObject) (gen.DealGoodsUpdateResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	in := req.Body
	if in.Qnt == nil && in.Price == nil && in.Discount == nil && in.Vat == nil && in.Discription == nil && in.Note == nil {
		return nil, badRequest(`request body: at least one field besides "id" and "deal_id" is required`)
	}
	var value string
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		q := sqlFor(p)
		q.set("json", dealPositions.json("g"))
		q.bind("id", in.Id)
		q.bind("deal", in.DealId)
		q.set("visible", p.seesOwner("d.user_id"))
		var old string
		err := tx.GetContext(ctx, &old, q.expand(`
			SELECT {json}::text FROM deal_goods g JOIN deals d ON d.account_id = {acc} AND d.id = g.deal_id
			 WHERE g.account_id = {acc} AND g.id = {id} AND g.deal_id = {deal} AND {visible}
			   FOR UPDATE OF g`), q.args...)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("goods position %d of deal %d not found", in.Id, in.DealId)
		}
		if err != nil {
			return fmt.Errorf("read goods position %d: %w", in.Id, err)
		}
		u := newSQL()
		u.set("json", dealPositions.json("g"))
		err = tx.GetContext(ctx, &value, u.expand(`
			WITH g AS (
				UPDATE deal_goods AS g SET qnt = coalesce(`+u.arg(decimal(in.Qnt))+`::numeric, g.qnt),
					price = coalesce(`+u.arg(decimal(in.Price))+`::numeric, g.price),
					discount = coalesce(`+u.arg(decimal(in.Discount))+`::numeric, g.discount),
					vat = coalesce(`+u.arg(decimal(in.Vat))+`::numeric, g.vat),
					description = coalesce(`+u.arg(in.Discription)+`, g.description), note = coalesce(`+u.arg(in.Note)+`, g.note)
				 WHERE g.account_id = `+u.arg(p.AccountID)+` AND g.id = `+u.arg(in.Id)+`
				RETURNING *)
			SELECT {json}::text FROM g`), u.args...)
		if err != nil {
			return fmt.Errorf("update goods position %d: %w", in.Id, err)
		}
		changes, err := jsonChanges(old, value)
		if err != nil {
			return err
		}
		return writeJournal(ctx, tx, p, []journalEntry{{ModuleDeals, dealPositions.table, in.Id, "update", changes}})
	})
	if err != nil {
		return nil, dbError(err)
	}
	return gen.DealGoodsUpdate200JSONResponse{Body: success(value)}, nil
}

// jsonChanges maps each member that differs between two JSON objects (as
// PostgreSQL writes jsonb, so equal values have equal text) to [old, new].
func jsonChanges(oldJSON, newJSON string) (map[string][2]json.RawMessage, error) {
	var o, n map[string]json.RawMessage
	if err := json.Unmarshal([]byte(oldJSON), &o); err != nil {
		return nil, fmt.Errorf("compare states: %w", err)
	}
	if err := json.Unmarshal([]byte(newJSON), &n); err != nil {
		return nil, fmt.Errorf("compare states: %w", err)
	}
	changes := map[string][2]json.RawMessage{}
	for k, nv := range n {
		if ov := o[k]; string(ov) != string(nv) {
			changes[k] = [2]json.RawMessage{ov, nv}
		}
	}
	return changes, nil
}

// DocumentGoodsList implements GET /document/goods/list.
func (s *Server) DocumentGoodsList(ctx context.Context, req gen.DocumentGoodsListRequestObject) (gen.DocumentGoodsListResponseObject, error) {
	env, err := s.listPositions(ctx, documentPositions, req.Params.DocumentId)
	if err != nil {
		return nil, err
	}
	return gen.DocumentGoodsList200JSONResponse(env), nil
}

// DocumentGoodsInsert implements POST /document/goods/insert.
func (s *Server) DocumentGoodsInsert(ctx context.Context, req gen.DocumentGoodsInsertRequestObject) (gen.DocumentGoodsInsertResponseObject, error) {
	if err := s.insertCatalogueGoods(ctx, documentPositions, req.Params.DocumentId, req.Params.GoodsIds); err != nil {
		return nil, err
	}
	return gen.DocumentGoodsInsert200JSONResponse{Body: success("1")}, nil
}
