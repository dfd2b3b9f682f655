package impl

import (
	"maps"
	"strconv"
)

// listModules declares every module of the universal list: its columns (the
// whitelist of columns and sort keys), the filters it supports and its access
// rule. openapi.yaml documents the same columns and filters per module.
var listModules = map[int]*listModule{
	ModuleCompanies: companiesList,
	ModuleTasks:     tasksList,
	ModuleDocuments: documentsList,
	ModuleFinance:   financeList,
	ModuleSales:     salesList,
	ModuleDeals:     dealsList,
	ModuleGoods:     goodsList,
	ModuleMail:      mailList,
	ModuleJournal:   journalList,
}

// Column helpers: a plain column, a date-time shown in the owner's time zone,
// a joined name, and tags as a comma-separated string.
func col(expr string, joins ...string) listColumn { return listColumn{expr: expr, joins: joins} }

func dateTimeCol(expr string) listColumn {
	return listColumn{expr: "to_char(" + expr + " AT TIME ZONE {tz}::text, 'YYYY-MM-DD HH24:MI:SS')", sort: expr}
}

func nameCol(alias string) listColumn {
	return listColumn{expr: "coalesce(" + alias + ".name, '')", sort: alias + ".name", joins: []string{alias}}
}

func tagsCol(expr string) listColumn {
	return listColumn{expr: "array_to_string(" + expr + ", ',')", sort: expr}
}

// join helpers: a user, a directory value and a record joined by an id column,
// each of the caller's account.
func joinUser(alias, idCol string) listJoin { return joinTable("users", alias, idCol) }

func joinDir(alias, idCol string) listJoin { return joinTable("directory_values", alias, idCol) }

func joinTable(table, alias, idCol string) listJoin {
	return listJoin{name: alias, table: table, idCol: idCol,
		sql: "LEFT JOIN " + table + " " + alias + " ON " + alias + ".account_id = {acc} AND " + alias + ".id = " + idCol}
}

// joinCounterparty joins the counterparty of a record as co, only when the
// caller may open it (seesCounterparty): the company_* columns of a record
// whose counterparty the caller cannot open are those of no counterparty.
func joinCounterparty(idCol string) listJoin {
	j := joinTable("companies", "co", idCol)
	j.sql += " AND {co_seen}"
	j.seen = true
	return j
}

// joinContactPerson joins the contact person of a record as ct, only when the
// caller sees it with the record's counterparty (seesContactPerson): a column
// that reads ct must join co too.
func joinContactPerson(idCol string) listJoin {
	j := joinTable("contacts", "ct", idCol)
	j.sql += " AND " + seesContactPerson("ct", "co")
	return j
}

// visibleBy is the access rule of modules whose records have one responsible user.
func visibleBy(col string) func(q *listQuery) string {
	return func(q *listQuery) string { return q.p.seesOwner(col) }
}

// countByOwner reads the exact total of an unfiltered list from list_counts:
// the counts of the owners the caller may see.
func countByOwner(module int) func(q *listQuery) string {
	return func(q *listQuery) string {
		return "SELECT coalesce(sum(n), 0) FROM list_counts WHERE account_id = {acc} AND module = " + strconv.Itoa(module) +
			" AND kind = 0 AND " + q.p.seesOwner("owner_id")
	}
}

// recordFilters are the filters that tasks, documents, money movements and
// deals share: their counterparty, responsible users, a date range on dateCol
// (a timestamp compared in the owner's days when timestamp) and tags. A module
// adds its own to the map it gets.
func recordFilters(alias, dateCol string, timestamp bool) map[string]listFilter {
	return map[string]listFilter{
		"company_id": eqFilter(alias + ".company_id"),
		"user_ids":   ownersFilter(alias + ".user_id"),
		"date1":      dateFilter(dateCol, timestamp, true),
		"date2":      dateFilter(dateCol, timestamp, false),
		"tags":       tagsFilter(alias + ".tags"),
	}
}

// with adds filters to a map of them.
func with(fs map[string]listFilter, more map[string]listFilter) map[string]listFilter {
	maps.Copy(fs, more)
	return fs
}

var companiesList = &listModule{
	code:   ModuleCompanies,
	from:   "companies c",
	alias:  "c",
	always: "c.deleted_at IS NULL",
	joins: []listJoin{
		joinUser("u", "c.user_id"),
		joinUser("cb", "c.created_by"),
		joinDir("dt", "c.type_id"),
		joinDir("ds", "c.status_id"),
		joinDir("dc", "c.category_id"),
		joinDir("da", "c.agent_id"),
	},
	columns: map[string]listColumn{
		"id": col("c.id"), "name": col("c.name"), "address": col("c.address"),
		"created": dateTimeCol("c.created_at"), "city": col("c.city"), "region": col("c.region"),
		"country": col("c.country"), "activity_type": col("c.activity_type"), "property_form": col("c.property_form"),
		"type_id": col("c.type_id"), "type": nameCol("dt"),
		"created_by":  {expr: "coalesce(cb.name, c.created_via)", joins: []string{"cb"}},
		"info_source": col("c.info_source"), "first_name": col("c.first_name"), "middle_name": col("c.middle_name"),
		"last_name": col("c.last_name"), "url": col("c.url"), "user_id": col("c.user_id"), "user_name": nameCol("u"),
		"person": col("c.person"), "note": col("c.note"), "external_code": col("c.external_code"),
		"category_id": col("c.category_id"), "category": nameCol("dc"), "status_id": col("c.status_id"),
		"status": nameCol("ds"), "agent_id": col("c.agent_id"), "agent": nameCol("da"), "tax_id": col("c.tax_id"),
		"which_site_source": col("c.which_site_source"), "which_host_source": col("c.which_host_source"),
		"which_link_source": col("c.which_link_source"), "utm_campaign": col("c.utm_campaign"),
		"utm_source": col("c.utm_source"), "utm_medium": col("c.utm_medium"), "utm_content": col("c.utm_content"),
		"utm_term": col("c.utm_term"),
	},
	fields: ModuleCompanies,
	filters: map[string]listFilter{
		"id":       eqFilter("c.id"),
		"user_ids": ownersFilter("c.user_id"),
		"name":     containsFilter("c.name"),
		"email": func(q *listQuery, v string) error {
			if q.fast != nil {
				q.prefilterCompanies("email", v)
				return nil
			}
			// Of the counterparty or of its contact persons: both are rows of emails.
			q.where = append(q.where, `EXISTS (SELECT 1 FROM emails e
				WHERE e.account_id = {acc} AND lower(e.email) = lower(`+q.arg(v)+`::text) AND e.company_id = c.id)`)
			return nil
		},
		"phone": func(q *listQuery, v string) error {
			digits := onlyDigits(v)
			if len(digits) < 3 {
				return badRequest("phone: give at least 3 digits")
			}
			// A number is found by the end of its digits: "2000 0001" finds "+371 2000 0001".
			if q.fast != nil {
				q.prefilterCompanies("phone", v)
				return nil
			}
			q.where = append(q.where, `EXISTS (SELECT 1 FROM phones ph
				WHERE ph.account_id = {acc} AND reverse(ph.phone_digits) LIKE `+q.arg(reverseString(digits))+`::text || '%'
				  AND ph.company_id = c.id)`)
			return nil
		},
		"tax_id": func(q *listQuery, v string) error {
			// tax_id is the inn of the default requisites; without them it is "" and never matches.
			if v == "" {
				return badRequest("tax_id: empty")
			}
			// The second condition, true of every value given (no text sorts
			// below ''), tells a plan made for any value (Citus keeps only such
			// plans of a node's statements) that few counterparties match:
			// where most have no tax id, it would otherwise walk the account's
			// counterparties in the page's order instead of the tax id's index
			// (companies_tax_id), whose range it bounds.
			q.where = append(q.where, "c.tax_id = "+q.arg(v)+" AND c.tax_id > ''")
			return nil
		},
		"user_filter_ids": nil, // handled by applyReadyFilters
	},
	visible: visibleBy("c.user_id"),
	count:   countByOwner(ModuleCompanies),
}

var tasksList = &listModule{
	code:  ModuleTasks,
	from:  "tasks t",
	alias: "t",
	joins: []listJoin{
		joinUser("u", "t.user_id"),
		joinDir("dt", "t.type_id"),
		joinCounterparty("t.company_id"),
	},
	columns: map[string]listColumn{
		"id": col("t.id"), "note": col("t.note"), "status_id": col("t.status_id"),
		// Sorted by the text shown, as every text column is.
		"status":  {expr: "CASE t.status_id WHEN 2 THEN 'done' ELSE 'in work' END", sort: "CASE t.status_id WHEN 2 THEN 'done' ELSE 'in work' END"},
		"type_id": col("t.type_id"), "type": nameCol("dt"),
		"date_start": dateTimeCol("t.date_start"), "date_finish": dateTimeCol("t.date_finish"),
		"result": col("t.result"), "user_id": col("t.user_id"), "user_name": nameCol("u"),
		"company_id": col("t.company_id"), "company_name": nameCol("co"), "deal_id": col("t.deal_id"),
		"contact_id": col("t.contact_id"), "is_hot": {expr: "t.is_hot::int", sort: "t.is_hot"}, "tags": tagsCol("t.tags"),
	},
	filters: with(recordFilters("t", "t.date_start", true), map[string]listFilter{"deal_id": eqFilter("t.deal_id")}),
	visible: func(q *listQuery) string { return q.p.seesTask("t") },
	count: func(q *listQuery) string {
		switch {
		case q.p.Role == RoleAdmin:
			return "SELECT coalesce(sum(n), 0) FROM list_counts WHERE account_id = {acc} AND module = 2 AND kind = 0"
		case !q.p.seesDepartment():
			// kind 0: tasks the member is assigned; kind 1: tasks they assigned to someone else.
			return "SELECT coalesce(sum(n), 0) FROM list_counts WHERE account_id = {acc} AND module = 2 AND owner_id = {me}"
		}
		return "" // a head's department: the two kinds overlap; count the rows
	},
}

var documentsList = &listModule{
	code:  ModuleDocuments,
	from:  "documents d",
	alias: "d",
	joins: []listJoin{
		joinUser("u", "d.user_id"),
		joinDir("dt", "d.type_id"),
		joinDir("ds", "d.status_id"),
		joinCounterparty("d.company_id"),
		joinTable("deals", "dl", "d.deal_id"),
	},
	columns: map[string]listColumn{
		"id": col("d.id"), "number": col("d.number"), "date": col("d.date"), "sum": col("d.sum"),
		"type_id": col("d.type_id"), "type": nameCol("dt"), "status_id": col("d.status_id"), "status": nameCol("ds"),
		"note": col("d.note"), "user_id": col("d.user_id"), "user_name": nameCol("u"), "company_id": col("d.company_id"),
		"company_name": nameCol("co"), "deal_id": col("d.deal_id"), "deal": nameCol("dl"),
		"contact_id": col("d.contact_id"), "date_expire": col("d.date_expire"), "external_code": col("d.external_code"),
		"tags": tagsCol("d.tags"),
	},
	filters: with(recordFilters("d", "d.date", false), map[string]listFilter{"deal_id": eqFilter("d.deal_id")}),
	visible: visibleBy("d.user_id"),
	count:   countByOwner(ModuleDocuments),
}

var financeList = &listModule{
	code:  ModuleFinance,
	from:  "money_movements m",
	alias: "m",
	joins: []listJoin{
		joinUser("u", "m.user_id"),
		joinDir("dt", "m.type_id"),
		joinDir("dc", "m.category_id"),
		joinTable("money_accounts", "ma", "m.money_account_id"),
		joinCounterparty("m.company_id"),
	},
	columns: map[string]listColumn{
		"id": col("m.id"), "date": col("m.date"), "sum": col("m.sum"), "sum_currency": col("m.sum_currency"),
		"direction_id": col("m.direction"),
		"direction":    {expr: "CASE m.direction WHEN 1 THEN 'income' ELSE 'expense' END", sort: "m.direction"},
		"type_id":      col("m.type_id"), "type": nameCol("dt"), "category_id": col("m.category_id"),
		"category": nameCol("dc"), "account_id": col("m.money_account_id"), "account": nameCol("ma"),
		"currency": {expr: "ma.currency", joins: []string{"ma"}}, "note": col("m.note"), "user_id": col("m.user_id"),
		"user_name": nameCol("u"), "company_id": col("m.company_id"), "company_name": nameCol("co"),
		"deal_id": col("m.deal_id"), "tags": tagsCol("m.tags"),
	},
	filters: with(recordFilters("m", "m.date", false), map[string]listFilter{"deal_id": eqFilter("m.deal_id")}),
	visible: visibleBy("m.user_id"),
	count:   countByOwner(ModuleFinance),
}

// salesList is module 6: the goods positions of documents whose type is an
// invoice, that is the goods sold.
var salesList = &listModule{
	code: ModuleSales,
	from: "document_goods dg",
	inner: "JOIN documents d ON d.account_id = {acc} AND d.id = dg.document_id " +
		"JOIN directory_values dty ON dty.account_id = {acc} AND dty.id = d.type_id AND dty.is_invoice",
	alias: "dg",
	joins: []listJoin{
		joinUser("u", "d.user_id"),
		joinCounterparty("d.company_id"),
	},
	columns: map[string]listColumn{
		"id": col("dg.id"), "date": {expr: "d.date", sort: "d.date"}, "document_id": col("dg.document_id"),
		"number": col("d.number"), "company_id": col("d.company_id"), "company_name": nameCol("co"),
		"deal_id": col("d.deal_id"), "goods_id": col("dg.goods_id"), "discription": col("dg.description"),
		"code": col("dg.code"), "qnt": col("dg.qnt"), "price": col("dg.price"), "discount": col("dg.discount"),
		"vat": col("dg.vat"), "sum": col("dg.sum"), "user_id": col("d.user_id"), "user_name": nameCol("u"),
	},
	filters: map[string]listFilter{
		"company_id": eqFilter("d.company_id"),
		"deal_id":    eqFilter("d.deal_id"),
		"user_ids":   ownersFilter("d.user_id"),
		"date1":      dateFilter("d.date", false, true),
		"date2":      dateFilter("d.date", false, false),
	},
	visible: visibleBy("d.user_id"),
}

var dealsList = &listModule{
	code:  ModuleDeals,
	from:  "deals dl",
	alias: "dl",
	joins: []listJoin{
		joinUser("u", "dl.user_id"),
		joinDir("dt", "dl.type_id"),
		joinDir("ds", "dl.status_id"),
		joinCounterparty("dl.company_id"),
		joinDir("cot", "co.type_id"),
		joinDir("cos", "co.status_id"),
		joinDir("coc", "co.category_id"),
	},
	columns: map[string]listColumn{
		"id": col("dl.id"), "name": col("dl.name"), "sum": col("dl.sum"), "type_id": col("dl.type_id"),
		"type": nameCol("dt"), "status_id": col("dl.status_id"), "status": nameCol("ds"),
		"company_id": col("dl.company_id"), "company_name": nameCol("co"),
		"company_type":     {expr: "coalesce(cot.name, '')", sort: "cot.name", joins: []string{"co", "cot"}},
		"company_status":   {expr: "coalesce(cos.name, '')", sort: "cos.name", joins: []string{"co", "cos"}},
		"company_category": {expr: "coalesce(coc.name, '')", sort: "coc.name", joins: []string{"co", "coc"}},
		"company_tax_id":   col("co.tax_id", "co"), "company_country": col("co.country", "co"),
		"company_region": col("co.region", "co"), "company_city": col("co.city", "co"),
		"company_url": col("co.url", "co"), "user_id": col("dl.user_id"), "user_name": nameCol("u"),
		"note": col("dl.note"),
	},
	fields: ModuleDeals,
	filters: with(recordFilters("dl", "dl.date_start", false), map[string]listFilter{
		"id":              eqFilter("dl.id"),
		"type_id":         eqFilter("dl.type_id"),
		"status_id":       eqFilter("dl.status_id"),
		"user_filter_ids": nil,
	}),
	visible: visibleBy("dl.user_id"),
	count:   countByOwner(ModuleDeals),
}

var goodsList = &listModule{
	code:   ModuleGoods,
	from:   "goods g",
	alias:  "g",
	always: "g.active",
	columns: map[string]listColumn{
		"id": col("g.id"), "name": col("g.name"), "code": col("g.code"), "unit": col("g.unit"),
		"price": col("g.price"), "qnt": col("g.qnt"), "vat": col("g.vat"), "note": col("g.note"),
	},
	filters: map[string]listFilter{
		"id":   eqFilter("g.id"),
		"name": containsFilter("g.name"),
	},
	// The catalogue is the whole account's.
	visible: func(*listQuery) string { return "TRUE" },
}

// mailList is module 24. Without user_ids it shows the token owner's own mail
// accounts; user_ids selects whose mail accounts, among the users the caller may see.
var mailList = &listModule{
	code:  ModuleMail,
	from:  "mail_messages mm",
	alias: "mm",
	joins: []listJoin{
		joinTable("mail_accounts", "ma", "mm.mail_account_id"),
		joinUser("mu", "ma.user_id"),
		joinCounterparty("mm.company_id"),
		joinContactPerson("mm.contact_id"),
		joinTable("deals", "dl", "mm.deal_id"),
		joinDir("cot", "co.type_id"),
		joinDir("cos", "co.status_id"),
		joinDir("coc", "co.category_id"),
	},
	columns: map[string]listColumn{
		"id":           col("mm.id"),
		"from":         {expr: "coalesce(nullif(mm.from_name, ''), mm.from_address)", sort: "mm.from_address"},
		"from_address": col("mm.from_address"),
		"to":           {expr: "coalesce(nullif(mm.to_name, ''), mm.to_address)", sort: "mm.to_address"},
		"to_address":   col("mm.to_address"), "cc": col("mm.cc"), "bcc": col("mm.bcc"), "subject": col("mm.subject"),
		"date":       dateTimeCol("mm.date"),
		"user_name":  {expr: "coalesce(mu.name, '')", sort: "mu.name", joins: []string{"ma", "mu"}},
		"company_id": col("mm.company_id"), "company_name": nameCol("co"), "contact_id": col("mm.contact_id"),
		"contact":             {expr: "coalesce(ct.name, '')", sort: "ct.name", joins: []string{"co", "ct"}},
		"company_type_id":     col("co.type_id", "co"),
		"company_type":        {expr: "coalesce(cot.name, '')", sort: "cot.name", joins: []string{"co", "cot"}},
		"company_category_id": col("co.category_id", "co"),
		"company_category":    {expr: "coalesce(coc.name, '')", sort: "coc.name", joins: []string{"co", "coc"}},
		"company_status_id":   col("co.status_id", "co"),
		"company_status":      {expr: "coalesce(cos.name, '')", sort: "cos.name", joins: []string{"co", "cos"}},
		"deal_id":             col("mm.deal_id"), "deal": nameCol("dl"), "message_id": col("mm.message_id"),
		"attachment_flag":    {expr: "mm.attachment_flag::int", sort: "mm.attachment_flag"},
		"small_part_of_body": col("mm.small_part_of_body"), "body": col("mm.body"),
	},
	defaultColumns: "id,date,from,to,subject,company_name,attachment_flag",
	filters: map[string]listFilter{
		"company_id": eqFilter("mm.company_id"),
		"deal_id":    eqFilter("mm.deal_id"),
		"id":         eqFilter("mm.id"),
		"user_ids": func(q *listQuery, v string) error {
			ids, err := parseIDs("user_ids", v)
			q.owners = ids
			return err
		},
		"date1":           dateFilter("mm.date", true, true),
		"date2":           dateFilter("mm.date", true, false),
		"segment":         intFilter("mm.folder"),
		"subject":         containsFilter("mm.subject"),
		"to_address":      containsFilter("mm.to_address"),
		"from_address":    containsFilter("mm.from_address"),
		"user_filter_ids": nil,
	},
	visible: func(q *listQuery) string {
		q.set("mailboxes", q.p.mailboxes(q.sqlText, q.owners))
		return "mm.mail_account_id IN ({mailboxes})"
	},
	count: func(q *listQuery) string {
		return "SELECT coalesce(sum(n), 0) FROM list_counts WHERE account_id = {acc} AND module = 24 AND owner_id IN ({mailboxes})"
	},
	ownerScoped: true,
}

var journalList = &listModule{
	code:  ModuleJournal,
	from:  "journal j",
	alias: "j",
	joins: []listJoin{joinUser("u", "j.user_id")},
	columns: map[string]listColumn{
		"id": col("j.id"), "date": dateTimeCol("j.at"), "user_id": col("j.user_id"), "user_name": nameCol("u"),
		"module": col("j.module"), "entity": col("j.entity"), "record_id": col("j.record_id"),
		"action": col("j.action"), "changes": col("j.changes"),
	},
	filters: map[string]listFilter{
		"id":       eqFilter("j.id"),
		"user_ids": ownersFilter("j.user_id"),
		"date1":    dateFilter("j.at", true, true),
		"date2":    dateFilter("j.at", true, false),
	},
	// Admins see every change; heads the changes of their department's users;
	// members their own.
	visible: func(q *listQuery) string { return q.p.seesJournal("j") },
	count:   countByOwner(ModuleJournal),
}
