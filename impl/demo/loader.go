package demo

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/crmservice/crm/impl"
	"github.com/crmservice/crm/impl/mailer"
)

// createStep is a step of creating the demo account and the rows it writes
// in a load, as measured: they only feed the estimate of what is left, and
// TestLoadProgress keeps them close.
type createStep struct {
	name string
	rows int
	run  func(*demoLoader) error
}

func createSteps() []createStep {
	return []createStep{
		{"account", 10, (*demoLoader).loadAccount},
		{"directories", 70, (*demoLoader).loadDirectories},
		{"field definitions", 3, (*demoLoader).loadFieldDefinitions},
		{"companies", 1183, (*demoLoader).loadCompanies},
		{"contacts", 1285, (*demoLoader).loadContacts},
		{"requisites", 178, (*demoLoader).loadRequisites},
		{"goods", 25, (*demoLoader).loadGoods},
		{"deals", 420, (*demoLoader).loadDeals},
		{"tasks", 600, (*demoLoader).loadTasks},
		{"documents", 641, (*demoLoader).loadDocuments},
		{"money", 412, (*demoLoader).loadMoney},
		{"mail", 157, (*demoLoader).loadMail},
		{"kpi plans", 99, (*demoLoader).loadKPIPlans},
		{"filters", 3, (*demoLoader).loadFilters},
	}
}

func createDemo(ctx context.Context, tx *sqlx.Tx, now time.Time, t *tracker) (*Demo, error) {
	loc, err := time.LoadLocation(demoTimeZone)
	if err != nil {
		return nil, fmt.Errorf("demo: time zone: %w", err)
	}
	local := now.In(loc)
	l := &demoLoader{
		ctx:      ctx,
		tx:       tx,
		progress: t,
		rng:      rand.New(rand.NewPCG(demoSeedHi, demoSeedLo)),
		now:      now,
		loc:      loc,
		today:    time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, loc),
	}
	steps := createSteps()
	later := tokenRows
	for _, s := range steps {
		later += s.rows
	}
	for _, s := range steps {
		later -= s.rows
		t.at(s.name, s.rows, later)
		if err := s.run(l); err != nil {
			return nil, fmt.Errorf("demo: %s: %w", s.name, err)
		}
	}
	return &Demo{AccountID: l.accountID, AdminUserID: l.users[0].id, Created: true}, nil
}

// demoLoader generates the demo account and inserts it table by table. Rows are
// generated with indexes into the loader's slices and get their ids on insert.
// Two loads on the same day draw the same sequence: which draws happen never
// depends on the time of day of now, and rows are ordered by their drawn times,
// not by those clamped to now.
type demoLoader struct {
	ctx      context.Context
	tx       *sqlx.Tx
	progress *tracker
	rng      *rand.Rand
	now      time.Time
	loc      *time.Location
	today    time.Time // midnight of now's day in the account time zone

	accountID     int64
	users         []demoUser
	dirs          []demoDirValue
	dirIndex      map[demoDirKey]int
	countries     []demoCountry
	companies     []demoCompany
	byUser        [][]int // company indexes per user index
	contacts      []demoContact
	emails        []demoEmail
	goods         []demoGoods
	deals         []demoDeal
	docs          []demoDocument
	moneyAccounts []int64
}

type demoUser struct {
	id          int64
	name        string
	login       string
	role        string
	dept        int // index into the departments, -1 for none
	timeZone    string
	usersReport bool
	deptsReport bool
	plan        bool // has KPI plans
}

type demoDirKey struct {
	code int
	name string
}

type demoDirValue struct {
	code       int
	name       string
	weight     int // how often the generator picks the value
	controlled bool
	invoice    bool
	id         int64
}

type demoCompany struct {
	id                  int64
	name                string
	person              int64
	first, last         string
	country             int
	address, city, url  string
	activity, form      string
	nace                string
	infoSource, note    string
	tags                []string
	externalCode        string
	typeID, statusID    int64
	categoryID, groupID int64
	agentID             int64
	user                int
	utm                 [5]string // campaign, source, medium, content, term
	site, host, link    string
	extra               string
	domain              string
	createdDay          int
	drawn               time.Time // created_at before it is clamped to now; orders the rows
	createdAt           time.Time
	contacts            []int
	ownEmails           []int
	deals               []int
	invoices            []int
}

type demoContact struct {
	id           int64
	company      int
	first, last  string
	positionID   int64
	statusID     int64
	note         string
	createdAt    time.Time
	email, phone string
}

type demoEmail struct {
	company, contact int // contact -1: the counterparty's own
	email            string
	name             string // whom the address reaches
	first            string // for the greeting; "" for a shared mailbox
	createdAt        time.Time
}

type demoPhone struct {
	company, contact int
	phone, descr     string
	createdAt        time.Time
}

type demoGoods struct {
	id     int64
	name   string
	code   string
	unit   string
	price  int64 // cents
	maxQnt int
	note   string
}

type demoPosition struct {
	goods       int // -1: a position outside the catalogue
	description string
	code        string
	qnt         int
	price       int64 // cents
	discount    int
}

// sum is the position's sum in cents as the generated column computes it.
func (p demoPosition) sum() int64 {
	return (int64(p.qnt)*p.price*int64(100-p.discount) + 50) / 100
}

type demoDeal struct {
	id                  int64
	name                string
	company, contact    int
	typeID, stageID     int64
	user                int
	startDay, finishDay int
	sum                 int64
	note                string
	tags                []string
	extra               string
	drawn, createdAt    time.Time
	positions           []demoPosition
}

type demoDocument struct {
	id                     int64
	typeName               string
	number                 string
	day                    int
	sum                    int64
	typeID, statusID       int64
	status                 string
	note                   string
	user                   int
	company, deal, contact int
	expires                time.Time // zero: no expiry date
	externalCode           string
	tags                   []string
	drawn, createdAt       time.Time
	positions              []demoPosition
}

func demoPositionsSum(ps []demoPosition) int64 {
	var s int64
	for _, p := range ps {
		s += p.sum()
	}
	return s
}

// loadAccount inserts the account, its departments and its staff.
func (l *demoLoader) loadAccount() error {
	created := l.day(-200)
	err := l.tx.GetContext(l.ctx, &l.accountID, `
		INSERT INTO accounts (name, base_currency, time_zone, created_at) VALUES ($1, $2, $3, $4) RETURNING id`,
		AccountName, demoCurrency, demoTimeZone, created)
	if err != nil {
		return fmt.Errorf("insert account: %w", err)
	}
	l.progress.add(1)
	depts := []string{"Sales", "Key accounts"}
	deptIDs, err := l.insert("departments", demoText("name", depts), demoTime("created_at", demoRepeat(created, len(depts))))
	if err != nil {
		return err
	}
	l.users = demoStaff()
	ids, err := l.insert("users",
		demoText("name", demoEach(l.users, func(u *demoUser) string { return u.name })),
		demoText("login", demoEach(l.users, func(u *demoUser) string { return u.login })),
		demoText("role", demoEach(l.users, func(u *demoUser) string { return u.role })),
		demoRef("department_id", demoEach(l.users, func(u *demoUser) int64 {
			if u.dept < 0 {
				return 0
			}
			return deptIDs[u.dept]
		})),
		demoBool("kpi_users_report", demoEach(l.users, func(u *demoUser) bool { return u.usersReport })),
		demoBool("kpi_departments_report", demoEach(l.users, func(u *demoUser) bool { return u.deptsReport })),
		demoNullText("time_zone", demoEach(l.users, func(u *demoUser) string { return u.timeZone })),
		demoTime("created_at", demoRepeat(created, len(l.users))),
	)
	if err != nil {
		return err
	}
	for i := range l.users {
		l.users[i].id = ids[i]
	}
	l.byUser = make([][]int, len(l.users))
	return nil
}

func (l *demoLoader) loadDirectories() error {
	l.dirs = demoDirectoryValues()
	l.dirIndex = make(map[demoDirKey]int, len(l.dirs))
	sorts := make([]int64, len(l.dirs))
	for i, v := range l.dirs {
		if i > 0 && l.dirs[i-1].code == v.code {
			sorts[i] = sorts[i-1] + 10
		} else {
			sorts[i] = 10
		}
		l.dirIndex[demoDirKey{v.code, v.name}] = i
	}
	ids, err := l.insert("directory_values",
		demoInt("directory_code", demoEach(l.dirs, func(v *demoDirValue) int64 { return int64(v.code) })),
		demoText("name", demoEach(l.dirs, func(v *demoDirValue) string { return v.name })),
		demoInt("sort", sorts),
		demoBool("is_controlled", demoEach(l.dirs, func(v *demoDirValue) bool { return v.controlled })),
		demoBool("is_invoice", demoEach(l.dirs, func(v *demoDirValue) bool { return v.invoice })),
		demoTime("created_at", demoRepeat(l.day(-200), len(l.dirs))),
	)
	if err != nil {
		return err
	}
	for i := range l.dirs {
		l.dirs[i].id = ids[i]
	}
	return nil
}

// dirID is the id of a value of a directory that demoDirectoryValues defines.
func (l *demoLoader) dirID(code int, name string) int64 {
	i, ok := l.dirIndex[demoDirKey{code, name}]
	if !ok {
		panic(fmt.Sprintf("demo: directory %d has no value %q", code, name))
	}
	return l.dirs[i].id
}

// pickDir draws a value of a directory by the values' weights.
func (l *demoLoader) pickDir(code int) *demoDirValue {
	var vals []*demoDirValue
	var weights []int
	for i := range l.dirs {
		if l.dirs[i].code == code {
			vals = append(vals, &l.dirs[i])
			weights = append(weights, l.dirs[i].weight)
		}
	}
	return vals[l.weighted(weights)]
}

// pickNamed draws one of the named values of a directory by the given weights.
func (l *demoLoader) pickNamed(code int, names []string, weights []int) (int64, string) {
	name := names[l.weighted(weights)]
	return l.dirID(code, name), name
}

func (l *demoLoader) loadFieldDefinitions() error {
	_, err := l.insert("field_definitions",
		demoInt("module", []int64{impl.ModuleCompanies, impl.ModuleCompanies, impl.ModuleDeals}),
		demoText("name", []string{"industry", "employees", "source_campaign"}),
		demoText("title", []string{"Industry", "Employees", "Source campaign"}),
		demoText("type", []string{"text", "number", "text"}),
		demoTime("created_at", demoRepeat(l.day(-200), 3)),
	)
	return err
}

func (l *demoLoader) loadCompanies() error {
	l.countries = demoCountries()
	firsts, activities := demoCompanyWords(), demoActivities()
	names := l.rng.Perm(len(firsts) * len(activities))
	seen := map[string]bool{}
	var phones []demoPhone
	legal := 0
	for i := range demoCompanyCount {
		var c demoCompany
		if i%5 == 4 {
			c = l.newPerson()
		} else {
			n := names[legal]
			legal++
			c = l.newLegalEntity(firsts[n/len(activities)], activities[n%len(activities)])
		}
		l.companies = append(l.companies, c)
	}
	// Ids in the order of creation, as if the counterparties had been entered one by one.
	slices.SortStableFunc(l.companies, func(a, b demoCompany) int { return a.drawn.Compare(b.drawn) })
	for ci := range l.companies {
		c := &l.companies[ci]
		l.byUser[c.user] = append(l.byUser[c.user], ci)
		phones = append(phones, l.companyContactData(ci, seen)...)
	}
	ids, err := l.insert("companies",
		demoText("name", demoEach(l.companies, func(c *demoCompany) string { return c.name })),
		demoInt("person", demoEach(l.companies, func(c *demoCompany) int64 { return c.person })),
		demoText("first_name", demoEach(l.companies, func(c *demoCompany) string { return c.first })),
		demoText("last_name", demoEach(l.companies, func(c *demoCompany) string { return c.last })),
		demoText("address", demoEach(l.companies, func(c *demoCompany) string { return c.address })),
		demoText("city", demoEach(l.companies, func(c *demoCompany) string { return c.city })),
		demoText("country", demoEach(l.companies, func(c *demoCompany) string { return l.countries[c.country].name })),
		demoText("url", demoEach(l.companies, func(c *demoCompany) string { return c.url })),
		demoText("activity_type", demoEach(l.companies, func(c *demoCompany) string { return c.activity })),
		demoText("property_form", demoEach(l.companies, func(c *demoCompany) string { return c.form })),
		demoText("info_source", demoEach(l.companies, func(c *demoCompany) string { return c.infoSource })),
		demoText("note", demoEach(l.companies, func(c *demoCompany) string { return c.note })),
		demoTags("tags", demoEach(l.companies, func(c *demoCompany) []string { return c.tags })),
		demoText("external_code", demoEach(l.companies, func(c *demoCompany) string { return c.externalCode })),
		demoInt("type_id", demoEach(l.companies, func(c *demoCompany) int64 { return c.typeID })),
		demoRef("status_id", demoEach(l.companies, func(c *demoCompany) int64 { return c.statusID })),
		demoRef("category_id", demoEach(l.companies, func(c *demoCompany) int64 { return c.categoryID })),
		demoRef("group_id", demoEach(l.companies, func(c *demoCompany) int64 { return c.groupID })),
		demoRef("agent_id", demoEach(l.companies, func(c *demoCompany) int64 { return c.agentID })),
		demoInt("user_id", demoEach(l.companies, func(c *demoCompany) int64 { return l.users[c.user].id })),
		demoText("which_site_source", demoEach(l.companies, func(c *demoCompany) string { return c.site })),
		demoText("which_host_source", demoEach(l.companies, func(c *demoCompany) string { return c.host })),
		demoText("which_link_source", demoEach(l.companies, func(c *demoCompany) string { return c.link })),
		demoText("utm_campaign", demoEach(l.companies, func(c *demoCompany) string { return c.utm[0] })),
		demoText("utm_source", demoEach(l.companies, func(c *demoCompany) string { return c.utm[1] })),
		demoText("utm_medium", demoEach(l.companies, func(c *demoCompany) string { return c.utm[2] })),
		demoText("utm_content", demoEach(l.companies, func(c *demoCompany) string { return c.utm[3] })),
		demoText("utm_term", demoEach(l.companies, func(c *demoCompany) string { return c.utm[4] })),
		demoJSONCol("extra", demoEach(l.companies, func(c *demoCompany) string { return c.extra })),
		demoText("created_via", demoRepeat("demo", len(l.companies))),
		demoInt("created_by", demoEach(l.companies, func(c *demoCompany) int64 { return l.users[c.user].id })),
		demoTime("created_at", demoEach(l.companies, func(c *demoCompany) time.Time { return c.createdAt })),
		demoTime("updated_at", demoEach(l.companies, func(c *demoCompany) time.Time { return c.createdAt })),
	)
	if err != nil {
		return err
	}
	for i := range l.companies {
		l.companies[i].id = ids[i]
	}
	// The counterparties' own phones and e-mails; those of contact persons follow
	// with the contacts.
	if err := l.insertPhones(phones); err != nil {
		return err
	}
	return l.insertEmails(l.emails)
}

// newCompanyBase draws what legal entities and private persons share.
func (l *demoLoader) newCompanyBase() demoCompany {
	countryWeights := demoEach(l.countries, func(c *demoCountry) int { return c.weight })
	c := demoCompany{country: l.weighted(countryWeights), user: l.rng.IntN(len(l.users))}
	country := &l.countries[c.country]
	c.city = demoPick(l.rng, country.cities)
	c.address = fmt.Sprintf("%s %d", demoPick(l.rng, country.streets), 1+l.rng.IntN(120))
	c.createdDay = -l.rng.IntN(181)
	c.drawn = l.workTime(c.createdDay)
	c.createdAt = l.clampTime(c.drawn, time.Time{}, l.now)
	typ := l.pickDir(impl.DirCompanyTypes)
	c.typeID = typ.id
	if l.chance(0.9) {
		c.statusID = l.pickDir(impl.DirCompanyStatuses).id
	}
	if l.chance(0.6) {
		c.categoryID = l.pickDir(impl.DirCompanyCategories).id
	}
	if l.chance(0.5) {
		c.groupID = l.pickDir(impl.DirCompanyGroups).id
	}
	if l.chance(0.2) {
		c.agentID = l.pickDir(impl.DirAgents).id
	}
	if l.chance(0.7) {
		c.infoSource = demoPick(l.rng, []string{"Website", "Trade fair", "Referral", "Cold call", "LinkedIn", "Newsletter"})
	}
	if l.chance(0.2) {
		c.note = demoPick(l.rng, []string{
			"Prefers e-mail over phone calls.",
			"Invoices go to the accounting e-mail only.",
			"Pays reliably within 14 days.",
			"Has a framework agreement until the end of the year.",
			"Ask for the purchasing manager, not the reception.",
			"Interested in ergonomic furniture for the whole office.",
			"Moving to a new office next quarter.",
		})
	}
	if l.chance(0.35) {
		c.tags = l.pickSome([]string{"vip", "baltics", "nordics", "newsletter", "tender", "reseller"}, 1+l.rng.IntN(2))
	}
	if typ.name == "Key client" && l.chance(0.6) && !slices.Contains(c.tags, "vip") {
		c.tags = append(c.tags, "vip")
	}
	if l.chance(0.25) {
		l.addLeadSource(&c)
	}
	return c
}

// addLeadSource fills the web-analytics fields of a counterparty that came from a campaign.
func (l *demoLoader) addLeadSource(c *demoCompany) {
	src := demoPick(l.rng, [][3]string{
		{"google", "cpc", "www.google.com"},
		{"bing", "cpc", "www.bing.com"},
		{"linkedin", "social", "www.linkedin.com"},
		{"facebook", "social", "www.facebook.com"},
		{"newsletter", "email", ""},
	})
	campaign := demoPick(l.rng, demoCampaigns())
	c.utm = [5]string{
		campaign, src[0], src[1],
		demoPick(l.rng, []string{"banner-a", "banner-b", "text-link", ""}),
		demoPick(l.rng, []string{"office chairs", "ergonomic desk", "printer service", "copy paper wholesale", ""}),
	}
	c.site = "shop.demo.example"
	c.host = src[2]
	c.link = "https://shop.demo.example/landing/" + campaign
}

func (l *demoLoader) newLegalEntity(first string, act demoActivity) demoCompany {
	c := l.newCompanyBase()
	country := &l.countries[c.country]
	c.person = 1
	c.name = first + " " + act.suffix
	c.activity = act.activity
	c.nace = act.nace
	c.form = country.form
	c.domain = demoSlug(c.name) + ".example"
	c.url = "https://www." + c.domain
	extra := map[string]any{}
	if l.chance(0.75) {
		extra["industry"] = act.industry
	}
	if l.chance(0.6) {
		extra["employees"] = demoPick(l.rng, []int{4, 7, 12, 18, 25, 40, 60, 85, 120, 240})
	}
	c.extra = demoJSON(extra)
	if l.chance(0.3) {
		c.externalCode = fmt.Sprintf("ERP-%05d", 10000+l.rng.IntN(90000))
	}
	return c
}

func (l *demoLoader) newPerson() demoCompany {
	c := l.newCompanyBase()
	c.person = 2
	c.first, c.last = l.personName(c.country)
	c.name = c.last + " " + c.first
	c.domain = demoPick(l.rng, []string{"inbox.example", "mailbox.example", "post.example", "webmail.example"})
	c.extra = "{}"
	return c
}

// personName draws a first and a last name of the country; the Baltic last names
// have a female form.
func (l *demoLoader) personName(country int) (first, last string) {
	n := &l.countries[country]
	i := l.rng.IntN(len(n.maleLast))
	if l.chance(0.5) {
		last = n.maleLast[i]
		if len(n.femaleLast) > 0 {
			last = n.femaleLast[i]
		}
		return demoPick(l.rng, n.femaleFirst), last
	}
	return demoPick(l.rng, n.maleFirst), n.maleLast[i]
}

// companyContactData draws the counterparty's own e-mails (kept in l.emails) and
// phones.
func (l *demoLoader) companyContactData(ci int, seen map[string]bool) []demoPhone {
	c := &l.companies[ci]
	country := &l.countries[c.country]
	var locals []string
	var phones []demoPhone
	if c.person == 2 {
		locals = []string{strings.ToLower(c.first + "." + c.last)}
		if l.chance(0.3) {
			locals = append(locals, strings.ToLower(c.first[:1]+c.last))
		}
		phones = append(phones, demoPhone{company: ci, contact: -1, phone: l.digits(country.mobile), descr: "mobile"})
		if l.chance(0.3) {
			phones = append(phones, demoPhone{company: ci, contact: -1, phone: l.digits(country.landline), descr: "home"})
		}
	} else {
		locals = l.pickSome([]string{"info", "office", "sales", "accounting", "orders", "hello"}, 1+l.rng.IntN(2))
		phones = append(phones, demoPhone{company: ci, contact: -1, phone: l.digits(country.landline), descr: "office"})
		if l.chance(0.5) {
			descr := demoPick(l.rng, []string{"sales", "accounting", "reception"})
			phones = append(phones, demoPhone{company: ci, contact: -1, phone: l.digits(country.mobile), descr: descr})
		}
	}
	for _, local := range locals {
		e := demoEmail{company: ci, contact: -1, email: demoUniqueEmail(seen, local, c.domain), name: c.name, createdAt: c.createdAt}
		if c.person == 2 {
			e.name, e.first = c.first+" "+c.last, c.first
		}
		c.ownEmails = append(c.ownEmails, len(l.emails))
		l.emails = append(l.emails, e)
	}
	for i := range phones {
		phones[i].createdAt = c.createdAt
	}
	return phones
}

func (l *demoLoader) loadContacts() error {
	seen := map[string]bool{}
	for _, e := range l.emails {
		seen[e.email] = true
	}
	for ci := range l.companies {
		c := &l.companies[ci]
		if c.person == 2 {
			continue
		}
		for range l.weighted([]int{15, 35, 30, 20}) {
			l.newContact(ci, seen)
		}
	}
	ids, err := l.insert("contacts",
		demoInt("company_id", demoEach(l.contacts, func(p *demoContact) int64 { return l.companies[p.company].id })),
		demoText("first_name", demoEach(l.contacts, func(p *demoContact) string { return p.first })),
		demoText("last_name", demoEach(l.contacts, func(p *demoContact) string { return p.last })),
		demoRef("position_id", demoEach(l.contacts, func(p *demoContact) int64 { return p.positionID })),
		demoRef("status_id", demoEach(l.contacts, func(p *demoContact) int64 { return p.statusID })),
		demoText("note", demoEach(l.contacts, func(p *demoContact) string { return p.note })),
		demoInt("created_by", demoEach(l.contacts, func(p *demoContact) int64 { return l.users[l.companies[p.company].user].id })),
		demoTime("created_at", demoEach(l.contacts, func(p *demoContact) time.Time { return p.createdAt })),
	)
	if err != nil {
		return err
	}
	var emails []demoEmail
	var phones []demoPhone
	var socials []demoSocial
	for i := range l.contacts {
		p := &l.contacts[i]
		p.id = ids[i]
		l.companies[p.company].contacts = append(l.companies[p.company].contacts, i)
		emails = append(emails, demoEmail{company: p.company, contact: i, email: p.email,
			name: p.first + " " + p.last, first: p.first, createdAt: p.createdAt})
		phones = append(phones, demoPhone{company: p.company, contact: i, phone: p.phone, descr: "mobile", createdAt: p.createdAt})
		socials = append(socials, l.socials(i)...)
	}
	if err := l.insertEmails(emails); err != nil {
		return err
	}
	l.emails = append(l.emails, emails...)
	if err := l.insertPhones(phones); err != nil {
		return err
	}
	_, err = l.insert("contact_socials",
		demoInt("contact_id", demoEach(socials, func(s *demoSocial) int64 { return l.contacts[s.contact].id })),
		demoText("network", demoEach(socials, func(s *demoSocial) string { return s.network })),
		demoText("address", demoEach(socials, func(s *demoSocial) string { return s.address })),
		demoTime("created_at", demoEach(socials, func(s *demoSocial) time.Time { return l.contacts[s.contact].createdAt })),
	)
	return err
}

func (l *demoLoader) newContact(ci int, seen map[string]bool) {
	c := &l.companies[ci]
	p := demoContact{company: ci}
	p.first, p.last = l.personName(c.country)
	if l.chance(0.85) {
		p.positionID = l.pickDir(impl.DirPositions).id
	}
	if l.chance(0.5) {
		p.statusID = l.pickDir(impl.DirContactStatuses).id
	}
	if l.chance(0.15) {
		p.note = demoPick(l.rng, []string{
			"Best reached in the morning.",
			"Signs the orders above 1,000 EUR.",
			"On parental leave until autumn.",
			"Prefers Telegram to e-mail.",
		})
	}
	p.createdAt = l.clampTime(l.workTime(min(0, c.createdDay+l.rng.IntN(10))), c.createdAt, l.now)
	p.email = demoUniqueEmail(seen, strings.ToLower(p.first+"."+p.last), c.domain)
	p.phone = l.digits(l.countries[c.country].mobile)
	l.contacts = append(l.contacts, p)
}

type demoSocial struct {
	contact          int
	network, address string
}

func (l *demoLoader) socials(i int) []demoSocial {
	if !l.chance(0.35) {
		return nil
	}
	p := &l.contacts[i]
	first, last := strings.ToLower(p.first), strings.ToLower(p.last)
	var out []demoSocial
	for _, network := range l.pickSome([]string{"LinkedIn", "Telegram", "WhatsApp", "Skype"}, 1+l.rng.IntN(2)) {
		var addr string
		switch network {
		case "LinkedIn":
			addr = fmt.Sprintf("https://www.linkedin.com/in/%s-%s-%d", first, last, 100+l.rng.IntN(900))
		case "Telegram":
			addr = "@" + first + "_" + last
		case "WhatsApp":
			addr = p.phone
		default:
			addr = "live:" + first + "." + last
		}
		out = append(out, demoSocial{contact: i, network: network, address: addr})
	}
	return out
}

func (l *demoLoader) insertEmails(emails []demoEmail) error {
	_, err := l.insert("emails",
		demoInt("company_id", demoEach(emails, func(e *demoEmail) int64 { return l.companies[e.company].id })),
		demoRef("contact_id", demoEach(emails, func(e *demoEmail) int64 { return l.contactID(e.contact) })),
		demoText("email", demoEach(emails, func(e *demoEmail) string { return e.email })),
		demoTime("created_at", demoEach(emails, func(e *demoEmail) time.Time { return e.createdAt })),
	)
	return err
}

func (l *demoLoader) insertPhones(phones []demoPhone) error {
	_, err := l.insert("phones",
		demoInt("company_id", demoEach(phones, func(p *demoPhone) int64 { return l.companies[p.company].id })),
		demoRef("contact_id", demoEach(phones, func(p *demoPhone) int64 { return l.contactID(p.contact) })),
		demoText("phone", demoEach(phones, func(p *demoPhone) string { return p.phone })),
		demoText("descr", demoEach(phones, func(p *demoPhone) string { return p.descr })),
		demoTime("created_at", demoEach(phones, func(p *demoPhone) time.Time { return p.createdAt })),
	)
	return err
}

// contactID is the id of a contact by index, 0 (stored as NULL) for -1.
func (l *demoLoader) contactID(i int) int64 {
	if i < 0 {
		return 0
	}
	return l.contacts[i].id
}

type demoRequisites struct {
	company                  int
	isDefault                bool
	inn, kpp, okved          string
	shortName, fullName      string
	legalAddr, factAddr      string
	director, directorTitle  string
	accountant               string
	bank, bic, iban, comment string
}

func (l *demoLoader) loadRequisites() error {
	var rows []demoRequisites
	seen := map[string]bool{}
	for ci := range l.companies {
		c := &l.companies[ci]
		if c.person != 1 || !l.chance(0.7) {
			continue
		}
		r := l.newRequisites(ci, seen)
		rows = append(rows, r)
		if l.chance(0.08) {
			second := r
			second.isDefault = false
			bank := demoPick(l.rng, l.countries[c.country].banks)
			second.bank, second.bic, second.iban = bank.name, bank.bic, l.digits(bank.iban)
			second.comment = "Second bank account, for card settlements"
			rows = append(rows, second)
		}
	}
	_, err := l.insert("requisites",
		demoInt("company_id", demoEach(rows, func(r *demoRequisites) int64 { return l.companies[r.company].id })),
		demoBool("is_default", demoEach(rows, func(r *demoRequisites) bool { return r.isDefault })),
		demoText("inn", demoEach(rows, func(r *demoRequisites) string { return r.inn })),
		demoText("kpp", demoEach(rows, func(r *demoRequisites) string { return r.kpp })),
		demoText("okved", demoEach(rows, func(r *demoRequisites) string { return r.okved })),
		demoText("kr_name", demoEach(rows, func(r *demoRequisites) string { return r.shortName })),
		demoText("full_name", demoEach(rows, func(r *demoRequisites) string { return r.fullName })),
		demoText("adres_yur", demoEach(rows, func(r *demoRequisites) string { return r.legalAddr })),
		demoText("adres_fact", demoEach(rows, func(r *demoRequisites) string { return r.factAddr })),
		demoText("pocht_adr", demoEach(rows, func(r *demoRequisites) string { return r.factAddr })),
		demoText("dir_name", demoEach(rows, func(r *demoRequisites) string { return r.director })),
		demoText("dir_status", demoEach(rows, func(r *demoRequisites) string { return r.directorTitle })),
		demoText("gl_buh", demoEach(rows, func(r *demoRequisites) string { return r.accountant })),
		demoText("bank_name", demoEach(rows, func(r *demoRequisites) string { return r.bank })),
		demoText("bik", demoEach(rows, func(r *demoRequisites) string { return r.bic })),
		demoText("rs", demoEach(rows, func(r *demoRequisites) string { return r.iban })),
		demoText("requis_prim", demoEach(rows, func(r *demoRequisites) string { return r.comment })),
		demoTime("created_at", demoEach(rows, func(r *demoRequisites) time.Time { return l.companies[r.company].createdAt })),
	)
	return err
}

func (l *demoLoader) newRequisites(ci int, seen map[string]bool) demoRequisites {
	c := &l.companies[ci]
	country := &l.countries[c.country]
	r := demoRequisites{company: ci, isDefault: true, okved: c.nace, shortName: c.name + " " + c.form}
	for r.inn == "" || seen[r.inn] {
		r.inn = l.digits(country.vat)
	}
	seen[r.inn] = true
	r.kpp = strings.Map(func(ch rune) rune {
		if ch >= '0' && ch <= '9' {
			return ch
		}
		return -1
	}, r.inn)
	r.fullName = fmt.Sprintf(country.fullName, c.name)
	r.legalAddr = c.address + ", " + c.city + ", " + country.name
	r.factAddr = r.legalAddr
	if l.chance(0.2) {
		r.factAddr = fmt.Sprintf("%s %d, %s, %s", demoPick(l.rng, country.streets), 1+l.rng.IntN(120), c.city, country.name)
	}
	first, last := l.personName(c.country)
	r.director, r.directorTitle = first+" "+last, country.director
	if l.chance(0.6) {
		first, last = l.personName(c.country)
		r.accountant = first + " " + last
	}
	bank := demoPick(l.rng, country.banks)
	r.bank, r.bic, r.iban = bank.name, bank.bic, l.digits(bank.iban)
	if l.chance(0.3) {
		r.comment = demoPick(l.rng, []string{"VAT payer", "Invoices by e-mail only", "Payment term 30 days"})
	}
	return r
}

func (l *demoLoader) loadGoods() error {
	l.goods = demoCatalogue()
	ids, err := l.insert("goods",
		demoText("name", demoEach(l.goods, func(g *demoGoods) string { return g.name })),
		demoText("code", demoEach(l.goods, func(g *demoGoods) string { return g.code })),
		demoText("unit", demoEach(l.goods, func(g *demoGoods) string { return g.unit })),
		demoAmount("price", demoEach(l.goods, func(g *demoGoods) int64 { return g.price })),
		demoInt("qnt", demoRepeat(int64(1), len(l.goods))),
		demoInt("vat", demoRepeat(int64(21), len(l.goods))),
		demoText("note", demoEach(l.goods, func(g *demoGoods) string { return g.note })),
		demoTime("created_at", demoRepeat(l.day(-200), len(l.goods))),
	)
	if err != nil {
		return err
	}
	for i := range l.goods {
		l.goods[i].id = ids[i]
	}
	return nil
}

// dealCandidates are the counterparties that buy: not suppliers or competitors.
func (l *demoLoader) dealCandidates() []int {
	excluded := []int64{l.dirID(impl.DirCompanyTypes, "Supplier"), l.dirID(impl.DirCompanyTypes, "Competitor")}
	var out []int
	for i := range l.companies {
		if !slices.Contains(excluded, l.companies[i].typeID) {
			out = append(out, i)
		}
	}
	return out
}

func (l *demoLoader) loadDeals() error {
	candidates := l.dealCandidates()
	themes := demoDealThemes()
	for range demoDealCount {
		l.deals = append(l.deals, l.newDeal(demoPick(l.rng, candidates), demoPick(l.rng, themes)))
	}
	slices.SortStableFunc(l.deals, func(a, b demoDeal) int { return a.drawn.Compare(b.drawn) })
	ids, err := l.insert("deals",
		demoText("name", demoEach(l.deals, func(d *demoDeal) string { return d.name })),
		demoInt("company_id", demoEach(l.deals, func(d *demoDeal) int64 { return l.companies[d.company].id })),
		demoRef("contact_id", demoEach(l.deals, func(d *demoDeal) int64 { return l.contactID(d.contact) })),
		demoInt("type_id", demoEach(l.deals, func(d *demoDeal) int64 { return d.typeID })),
		demoInt("status_id", demoEach(l.deals, func(d *demoDeal) int64 { return d.stageID })),
		demoInt("user_id", demoEach(l.deals, func(d *demoDeal) int64 { return l.users[d.user].id })),
		demoDate("date_start", demoEach(l.deals, func(d *demoDeal) time.Time { return l.day(d.startDay) })),
		demoDate("date_finish", demoEach(l.deals, func(d *demoDeal) time.Time { return l.day(d.finishDay) })),
		demoAmount("sum", demoEach(l.deals, func(d *demoDeal) int64 { return d.sum })),
		demoText("note", demoEach(l.deals, func(d *demoDeal) string { return d.note })),
		demoTags("tags", demoEach(l.deals, func(d *demoDeal) []string { return d.tags })),
		demoJSONCol("extra", demoEach(l.deals, func(d *demoDeal) string { return d.extra })),
		demoInt("created_by", demoEach(l.deals, func(d *demoDeal) int64 { return l.users[d.user].id })),
		demoTime("created_at", demoEach(l.deals, func(d *demoDeal) time.Time { return d.createdAt })),
		demoTime("updated_at", demoEach(l.deals, func(d *demoDeal) time.Time { return d.createdAt })),
	)
	if err != nil {
		return err
	}
	var owners []int64
	var positions []demoPosition
	for i := range l.deals {
		d := &l.deals[i]
		d.id = ids[i]
		l.companies[d.company].deals = append(l.companies[d.company].deals, i)
		for _, p := range d.positions {
			owners = append(owners, d.id)
			positions = append(positions, p)
		}
	}
	return l.insertPositions("deal_goods", "deal_id", owners, positions)
}

type demoDealTheme struct {
	name   string
	groups []string // code prefixes of the catalogue goods the deal is about
}

func (l *demoLoader) newDeal(ci int, theme demoDealTheme) demoDeal {
	c := &l.companies[ci]
	d := demoDeal{company: ci, contact: -1, name: theme.name, user: c.user}
	if len(c.contacts) > 0 && l.chance(0.6) {
		d.contact = demoPick(l.rng, c.contacts)
	}
	if l.chance(0.15) {
		d.user = l.rng.IntN(len(l.users))
	}
	d.typeID = l.pickDir(impl.DirDealTypes).id
	future := l.chance(0.1)
	if future {
		d.startDay = 1 + l.rng.IntN(20)
		d.stageID, _ = l.pickNamed(impl.DirDealStages, []string{"Lead", "Qualified"}, []int{2, 1})
		d.drawn = l.workTime(-l.rng.IntN(7))
	} else {
		lo := max(-90, c.createdDay)
		d.startDay = lo + l.rng.IntN(1-lo)
		d.stageID = l.pickDir(impl.DirDealStages).id
		d.drawn = l.workTime(d.startDay)
	}
	d.createdAt = l.clampTime(d.drawn, c.createdAt, l.now)
	d.finishDay = min(d.startDay+10+l.rng.IntN(36), max(d.startDay, 30))
	if (d.stageID == l.dirID(impl.DirDealStages, "Won") || d.stageID == l.dirID(impl.DirDealStages, "Lost")) && d.finishDay > 0 {
		d.finishDay = max(d.startDay, 0)
	}
	if l.chance(0.2) {
		d.name += " (" + l.countries[c.country].name + ")"
	}
	d.positions = l.newPositions(1+l.rng.IntN(4), theme.groups)
	d.sum = demoPositionsSum(d.positions)
	if l.chance(0.6) {
		d.note = demoPick(l.rng, []string{
			"Decision expected after the board meeting.",
			"Needs delivery before the end of the month.",
			"Competing offer from a local supplier.",
			"Budget approved, waiting for the purchase order.",
			"Asked for a 10% discount on the whole order.",
			"Delivery to two offices, split the invoice.",
		})
	}
	if l.chance(0.4) {
		d.tags = l.pickSome([]string{"tender", "urgent", "repeat-order", "framework", "vip"}, 1+l.rng.IntN(2))
	}
	extra := map[string]any{}
	if l.chance(0.5) {
		extra["source_campaign"] = demoPick(l.rng, demoCampaigns())
	}
	d.extra = demoJSON(extra)
	return d
}

// newPosition draws a goods position from the given catalogue groups, now and
// then one outside the catalogue.
func (l *demoLoader) newPosition(groups []string) demoPosition {
	discount := 0
	if l.chance(0.5) {
		discount = 1 + l.rng.IntN(15)
	}
	if l.chance(0.1) {
		custom := demoPick(l.rng, []string{"Custom-made reception desk", "Express delivery surcharge", "Acoustic wall panels, made to measure", "Extended warranty, 3 years"})
		return demoPosition{goods: -1, description: custom, qnt: 1, price: int64(50+l.rng.IntN(850)) * 100, discount: discount}
	}
	var fit []int
	for i, g := range l.goods {
		if slices.Contains(groups, g.code[:3]) {
			fit = append(fit, i)
		}
	}
	gi := demoPick(l.rng, fit)
	g := &l.goods[gi]
	return demoPosition{goods: gi, description: g.name, code: g.code, qnt: 1 + l.rng.IntN(g.maxQnt), price: g.price, discount: discount}
}

// newPositions draws up to n positions, none twice.
func (l *demoLoader) newPositions(n int, groups []string) []demoPosition {
	var ps []demoPosition
	for try := 0; len(ps) < n && try < 4*n; try++ {
		p := l.newPosition(groups)
		if !slices.ContainsFunc(ps, func(q demoPosition) bool { return q.description == p.description }) {
			ps = append(ps, p)
		}
	}
	return ps
}

// insertPositions inserts the goods positions of deals or documents.
func (l *demoLoader) insertPositions(table, ownerCol string, owners []int64, ps []demoPosition) error {
	_, err := l.insert(table,
		demoInt(ownerCol, owners),
		demoRef("goods_id", demoEach(ps, func(p *demoPosition) int64 {
			if p.goods < 0 {
				return 0
			}
			return l.goods[p.goods].id
		})),
		demoText("description", demoEach(ps, func(p *demoPosition) string { return p.description })),
		demoText("code", demoEach(ps, func(p *demoPosition) string { return p.code })),
		demoInt("qnt", demoEach(ps, func(p *demoPosition) int64 { return int64(p.qnt) })),
		demoAmount("price", demoEach(ps, func(p *demoPosition) int64 { return p.price })),
		demoInt("discount", demoEach(ps, func(p *demoPosition) int64 { return int64(p.discount) })),
		demoInt("vat", demoRepeat(int64(21), len(ps))),
	)
	return err
}

type demoTask struct {
	company, deal, contact int
	note                   string
	typeID                 int64
	user, assigner         int
	start, finish          time.Time // finish zero: no deadline
	doneAt                 time.Time // zero: in work
	result                 string
	hot                    bool
	reminder               int64
	tags                   []string
	drawn, createdAt       time.Time
}

func (l *demoLoader) loadTasks() error {
	var tasks []demoTask
	// Every user gets a task today and an overdue one, so that each one's
	// dashboard has something to show.
	for u := range l.users {
		ci := demoPick(l.rng, l.byUser[u])
		today := l.newTask(ci, 0)
		overdue := l.newTask(ci, -1-u%3)
		for _, t := range []*demoTask{&today, &overdue} {
			t.user, t.assigner = u, u
			t.start = time.Date(t.start.Year(), t.start.Month(), t.start.Day(), 9+u, 0, 0, 0, l.loc)
			t.finish = t.start.Add(time.Hour)
			t.doneAt, t.result = time.Time{}, ""
			t.createdAt = l.clampTime(t.createdAt, time.Time{}, t.start)
		}
		tasks = append(tasks, today, overdue)
	}
	all := make([]int, len(l.companies))
	for i := range all {
		all[i] = i
	}
	active := l.withDeals(all)
	for len(tasks) < demoTaskCount {
		ci := l.rng.IntN(len(l.companies))
		if l.chance(0.4) {
			ci = demoPick(l.rng, active)
		}
		lo := max(-60, l.companies[ci].createdDay)
		tasks = append(tasks, l.newTask(ci, lo+l.rng.IntN(21-lo)))
	}
	slices.SortStableFunc(tasks, func(a, b demoTask) int { return a.drawn.Compare(b.drawn) })
	_, err := l.insert("tasks",
		demoInt("company_id", demoEach(tasks, func(t *demoTask) int64 { return l.companies[t.company].id })),
		demoRef("deal_id", demoEach(tasks, func(t *demoTask) int64 { return l.dealID(t.deal) })),
		demoRef("contact_id", demoEach(tasks, func(t *demoTask) int64 { return l.contactID(t.contact) })),
		demoText("note", demoEach(tasks, func(t *demoTask) string { return t.note })),
		demoInt("type_id", demoEach(tasks, func(t *demoTask) int64 { return t.typeID })),
		demoInt("status_id", demoEach(tasks, func(t *demoTask) int64 {
			if t.doneAt.IsZero() {
				return 1
			}
			return 2
		})),
		demoInt("user_id", demoEach(tasks, func(t *demoTask) int64 { return l.users[t.user].id })),
		demoInt("assigner_id", demoEach(tasks, func(t *demoTask) int64 { return l.users[t.assigner].id })),
		demoTime("date_start", demoEach(tasks, func(t *demoTask) time.Time { return t.start })),
		demoTime("date_finish", demoEach(tasks, func(t *demoTask) time.Time { return t.finish })),
		demoTime("done_at", demoEach(tasks, func(t *demoTask) time.Time { return t.doneAt })),
		demoText("result", demoEach(tasks, func(t *demoTask) string { return t.result })),
		demoBool("is_hot", demoEach(tasks, func(t *demoTask) bool { return t.hot })),
		demoRef("reminder_minutes", demoEach(tasks, func(t *demoTask) int64 { return t.reminder })),
		demoTags("tags", demoEach(tasks, func(t *demoTask) []string { return t.tags })),
		demoTime("created_at", demoEach(tasks, func(t *demoTask) time.Time { return t.createdAt })),
	)
	return err
}

// newTask draws a task of a counterparty starting on the given day.
func (l *demoLoader) newTask(ci, day int) demoTask {
	c := &l.companies[ci]
	t := demoTask{company: ci, deal: -1, contact: -1, user: c.user}
	if len(c.deals) > 0 && l.chance(0.5) {
		t.deal = demoPick(l.rng, c.deals)
	}
	if len(c.contacts) > 0 && l.chance(0.35) {
		t.contact = demoPick(l.rng, c.contacts)
	}
	kind := l.pickDir(impl.DirTaskKinds)
	t.typeID = kind.id
	t.note = demoPick(l.rng, demoTaskNotes(kind.name))
	if l.chance(0.25) {
		t.user = l.rng.IntN(len(l.users))
	}
	t.assigner = t.user
	if l.chance(0.35) {
		t.assigner = l.rng.IntN(3) // the admin or a head
	}
	t.start = l.workTime(day)
	hours := 1 + l.rng.IntN(3)
	if l.chance(0.85) {
		t.finish = t.start.Add(time.Duration(hours) * time.Hour)
	}
	deadline := t.start
	if !t.finish.IsZero() {
		deadline = t.finish
	}
	doneRoll := l.rng.Float64()
	delay := time.Duration(l.rng.IntN(180)) * time.Minute
	if l.chance(0.2) {
		delay += 24 * time.Hour
	}
	result := demoPick(l.rng, []string{
		"Done, the client confirmed.",
		"Offer sent, waiting for the answer.",
		"Client asked to call back next week.",
		"Agreed on delivery on Friday.",
		"Invoice paid, closed.",
		"No answer, left a message.",
		"Meeting held, minutes sent by e-mail.",
	})
	done := (day < 0 && doneRoll < 0.67) || (day == 0 && doneRoll < 0.5 && !deadline.After(l.now))
	if done {
		t.doneAt = l.clampTime(deadline.Add(delay), t.start, l.now)
		t.result = result
	}
	t.hot = l.chance(0.1)
	if l.chance(0.3) {
		t.reminder = demoPick(l.rng, []int64{15, 30, 60, 1440})
	}
	if l.chance(0.15) {
		t.tags = l.pickSome([]string{"urgent", "offer", "invoice", "delivery", "follow-up"}, 1)
	}
	t.drawn = l.workTime(day - l.rng.IntN(4))
	t.createdAt = l.clampTime(t.drawn, c.createdAt, l.now)
	return t
}

// withDeals are the counterparties of the list that have deals.
func (l *demoLoader) withDeals(list []int) []int {
	var out []int
	for _, ci := range list {
		if len(l.companies[ci].deals) > 0 {
			out = append(out, ci)
		}
	}
	return out
}

// dealID is the id of a deal by index, 0 (stored as NULL) for -1.
func (l *demoLoader) dealID(i int) int64 {
	if i < 0 {
		return 0
	}
	return l.deals[i].id
}

func (l *demoLoader) loadDocuments() error {
	var started []int
	for i := range l.deals {
		if l.deals[i].startDay <= 0 {
			started = append(started, i)
		}
	}
	statusWeights := map[string][]int{ // over Draft, Issued, Signed, Paid, Cancelled
		"Invoice":  {10, 35, 0, 45, 10},
		"Contract": {15, 15, 60, 0, 10},
		"Act":      {10, 20, 65, 0, 5},
		"Offer":    {25, 60, 0, 0, 15},
	}
	statuses := []string{"Draft", "Issued", "Signed", "Paid", "Cancelled"}
	type dealDoc struct {
		deal     int
		typeName string
	}
	issued := map[dealDoc]bool{} // a deal has at most one document of each type
	buyers := l.dealCandidates()
	for i := range demoDocumentCount {
		typeName := "Invoice"
		if i%2 == 1 {
			_, typeName = l.pickNamed(impl.DirDocumentTypes, []string{"Contract", "Act", "Offer"}, []int{3, 3, 4})
		}
		d := demoDocument{typeName: typeName, typeID: l.dirID(impl.DirDocumentTypes, typeName), deal: -1, contact: -1}
		d.statusID, d.status = l.pickNamed(impl.DirDocumentStatuses, statuses, statusWeights[typeName])
		var free []int
		if l.chance(0.7) {
			for _, di := range started {
				if !issued[dealDoc{di, typeName}] {
					free = append(free, di)
				}
			}
		}
		if len(free) > 0 {
			di := demoPick(l.rng, free)
			issued[dealDoc{di, typeName}] = true
			l.attachDeal(&d, di)
		} else {
			d.company = demoPick(l.rng, buyers)
			c := &l.companies[d.company]
			lo := max(-90, c.createdDay)
			d.day = lo + l.rng.IntN(1-lo)
			d.user = c.user
			d.positions = l.newPositions(1+l.rng.IntN(3), []string{"FUR", "PAP", "PRN", "STA", "SRV"})
		}
		d.sum = demoPositionsSum(d.positions)
		switch typeName {
		case "Invoice":
			d.expires = l.day(d.day + 14)
		case "Offer":
			d.expires = l.day(d.day + 30)
		}
		if l.chance(0.2) {
			d.note = demoPick(l.rng, []string{"Payment within 14 days.", "Delivery included.", "Prices include VAT.", "Signed copy received by post."})
		}
		if l.chance(0.3) {
			d.externalCode = fmt.Sprintf("ERP-D%05d", 20000+l.rng.IntN(80000))
		}
		if l.chance(0.15) {
			d.tags = l.pickSome([]string{"prepayment", "framework", "urgent"}, 1)
		}
		d.drawn = l.workTime(d.day)
		d.createdAt = l.clampTime(d.drawn, l.companies[d.company].createdAt, l.now)
		l.docs = append(l.docs, d)
	}
	slices.SortStableFunc(l.docs, func(a, b demoDocument) int { return a.drawn.Compare(b.drawn) })
	l.numberDocuments()
	ids, err := l.insert("documents",
		demoText("number", demoEach(l.docs, func(d *demoDocument) string { return d.number })),
		demoDate("date", demoEach(l.docs, func(d *demoDocument) time.Time { return l.day(d.day) })),
		demoAmount("sum", demoEach(l.docs, func(d *demoDocument) int64 { return d.sum })),
		demoInt("type_id", demoEach(l.docs, func(d *demoDocument) int64 { return d.typeID })),
		demoRef("status_id", demoEach(l.docs, func(d *demoDocument) int64 { return d.statusID })),
		demoText("note", demoEach(l.docs, func(d *demoDocument) string { return d.note })),
		demoInt("user_id", demoEach(l.docs, func(d *demoDocument) int64 { return l.users[d.user].id })),
		demoInt("company_id", demoEach(l.docs, func(d *demoDocument) int64 { return l.companies[d.company].id })),
		demoRef("deal_id", demoEach(l.docs, func(d *demoDocument) int64 { return l.dealID(d.deal) })),
		demoRef("contact_id", demoEach(l.docs, func(d *demoDocument) int64 { return l.contactID(d.contact) })),
		demoDate("date_expire", demoEach(l.docs, func(d *demoDocument) time.Time { return d.expires })),
		demoText("external_code", demoEach(l.docs, func(d *demoDocument) string { return d.externalCode })),
		demoTags("tags", demoEach(l.docs, func(d *demoDocument) []string { return d.tags })),
		demoInt("created_by", demoEach(l.docs, func(d *demoDocument) int64 { return l.users[d.user].id })),
		demoTime("created_at", demoEach(l.docs, func(d *demoDocument) time.Time { return d.createdAt })),
	)
	if err != nil {
		return err
	}
	var owners []int64
	var positions []demoPosition
	for i := range l.docs {
		d := &l.docs[i]
		d.id = ids[i]
		if d.typeName == "Invoice" {
			l.companies[d.company].invoices = append(l.companies[d.company].invoices, i)
		}
		for _, p := range d.positions {
			owners = append(owners, d.id)
			positions = append(positions, p)
		}
	}
	return l.insertPositions("document_goods", "document_id", owners, positions)
}

// attachDeal makes a document one of the deal's: its counterparty, a date within
// the deal and (at most three of) its positions.
func (l *demoLoader) attachDeal(d *demoDocument, di int) {
	deal := &l.deals[di]
	d.deal, d.company, d.user = di, deal.company, deal.user
	if deal.contact >= 0 && l.chance(0.5) {
		d.contact = deal.contact
	}
	lo, hi := max(deal.startDay, -90), min(deal.finishDay, 0)
	d.day = lo + l.rng.IntN(hi-lo+1)
	d.positions = slices.Clone(deal.positions[:min(3, len(deal.positions))])
}

// numberDocuments numbers the documents per type and year in date order, as
// "INV-2026-0001".
func (l *demoLoader) numberDocuments() {
	prefixes := map[string]string{"Invoice": "INV", "Contract": "CON", "Act": "ACT", "Offer": "OFF"}
	order := make([]int, len(l.docs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(l.docs[a].day, l.docs[b].day) })
	next := map[string]int{}
	for _, i := range order {
		d := &l.docs[i]
		series := fmt.Sprintf("%s-%d", prefixes[d.typeName], l.day(d.day).Year())
		next[series]++
		d.number = fmt.Sprintf("%s-%04d", series, next[series])
	}
}

type demoMovement struct {
	day                 int
	sum                 int64 // base currency, cents
	direction           int64 // 1 income, 2 expense
	typeID, categoryID  int64
	usd, transfer       bool
	note                string
	user, company, deal int
	tags                []string
}

func (l *demoLoader) loadMoney() error {
	var err error
	l.moneyAccounts, err = l.insert("money_accounts",
		demoText("name", []string{"Main account", "USD account"}),
		demoText("currency", []string{demoCurrency, "USD"}),
		demoTime("created_at", demoRepeat(l.day(-200), 2)),
	)
	if err != nil {
		return err
	}
	var ms []demoMovement
	for i := range l.docs {
		d := &l.docs[i]
		switch {
		case d.typeName != "Invoice":
		case d.status == "Paid":
			ms = append(ms, l.invoicePayment(d, d.sum))
		case d.status == "Issued" && l.chance(0.4):
			ms = append(ms, l.invoicePayment(d, d.sum/2))
		}
	}
	buyers := l.dealCandidates()
	for len(ms) < demoIncomeCount {
		ms = append(ms, l.otherIncome(demoPick(l.rng, buyers)))
	}
	for len(ms) < demoMovementCount {
		ms = append(ms, l.expense())
	}
	ms = append(ms, l.transfers()...)
	slices.SortStableFunc(ms, func(a, b demoMovement) int { return cmp.Compare(a.day, b.day) })
	_, err = l.insert("money_movements",
		demoDate("date", demoEach(ms, func(m *demoMovement) time.Time { return l.day(m.day) })),
		demoAmount("sum", demoEach(ms, func(m *demoMovement) int64 { return m.sum })),
		demoAmount("sum_currency", demoEach(ms, func(m *demoMovement) int64 {
			if m.usd {
				return (m.sum*demoUSDPer100 + 50) / 100
			}
			return m.sum
		})),
		demoInt("direction", demoEach(ms, func(m *demoMovement) int64 { return m.direction })),
		demoRef("type_id", demoEach(ms, func(m *demoMovement) int64 { return m.typeID })),
		demoRef("category_id", demoEach(ms, func(m *demoMovement) int64 { return m.categoryID })),
		demoInt("money_account_id", demoEach(ms, func(m *demoMovement) int64 {
			if m.usd {
				return l.moneyAccounts[1]
			}
			return l.moneyAccounts[0]
		})),
		demoBool("is_transfer", demoEach(ms, func(m *demoMovement) bool { return m.transfer })),
		demoText("note", demoEach(ms, func(m *demoMovement) string { return m.note })),
		demoInt("user_id", demoEach(ms, func(m *demoMovement) int64 { return l.users[m.user].id })),
		demoRef("company_id", demoEach(ms, func(m *demoMovement) int64 {
			if m.company < 0 {
				return 0
			}
			return l.companies[m.company].id
		})),
		demoRef("deal_id", demoEach(ms, func(m *demoMovement) int64 { return l.dealID(m.deal) })),
		demoTags("tags", demoEach(ms, func(m *demoMovement) []string { return m.tags })),
		demoInt("created_by", demoEach(ms, func(m *demoMovement) int64 { return l.users[m.user].id })),
		demoTime("created_at", demoEach(ms, func(m *demoMovement) time.Time { return l.pastWorkTimeAt(m.day, 10) })),
	)
	return err
}

// newMovement draws what every movement but a transfer has: payment form, money
// account and tags.
func (l *demoLoader) newMovement(day int, direction int64) demoMovement {
	m := demoMovement{day: day, direction: direction, company: -1, deal: -1}
	m.typeID = l.pickDir(impl.DirPaymentForms).id
	m.usd = l.chance(0.15)
	if l.chance(0.1) {
		m.tags = l.pickSome([]string{"recurring", "one-off", "prepayment"}, 1)
	}
	return m
}

func (l *demoLoader) invoicePayment(d *demoDocument, sum int64) demoMovement {
	m := l.newMovement(min(0, d.day+l.rng.IntN(15)), 1)
	m.sum, m.user, m.company, m.deal = sum, d.user, d.company, d.deal
	m.categoryID, _ = l.pickNamed(impl.DirMoneyCategories, []string{"Sales", "Services"}, []int{4, 1})
	m.note = "Payment for " + d.number
	if sum != d.sum {
		m.note = "Partial payment for " + d.number
	}
	return m
}

func (l *demoLoader) otherIncome(ci int) demoMovement {
	c := &l.companies[ci]
	lo := max(-90, c.createdDay)
	m := l.newMovement(lo+l.rng.IntN(1-lo), 1)
	m.company, m.user = ci, c.user
	if len(c.deals) > 0 && l.chance(0.4) {
		m.deal = demoPick(l.rng, c.deals)
	}
	m.sum = int64(5000 + l.rng.IntN(245000))
	m.categoryID, _ = l.pickNamed(impl.DirMoneyCategories, []string{"Sales", "Services"}, []int{7, 3})
	m.note = demoPick(l.rng, []string{"Card payment at the showroom", "Prepayment for the order", "Payment for services", "Cash sale"})
	return m
}

func (l *demoLoader) expense() demoMovement {
	m := l.newMovement(-l.rng.IntN(91), 2)
	m.user = l.rng.IntN(3)
	cats := []string{"Purchases", "Rent", "Salaries", "Marketing", "Taxes", "Software"}
	var cat string
	m.categoryID, cat = l.pickNamed(impl.DirMoneyCategories, cats, []int{45, 5, 10, 15, 7, 18})
	euros := map[string][2]int{ // range of amounts in whole euros
		"Purchases": {80, 2000}, "Rent": {1500, 2500}, "Salaries": {1800, 3500},
		"Marketing": {100, 1500}, "Taxes": {300, 2500}, "Software": {15, 400},
	}[cat]
	m.sum = int64(euros[0]+l.rng.IntN(euros[1]-euros[0]+1)) * 100
	m.note = demoPick(l.rng, demoExpenseNotes(cat))
	if cat == "Purchases" {
		if suppliers := l.companiesOfType("Supplier"); len(suppliers) > 0 {
			m.company = demoPick(l.rng, suppliers)
		}
	}
	return m
}

func (l *demoLoader) companiesOfType(name string) []int {
	id := l.dirID(impl.DirCompanyTypes, name)
	var out []int
	for i := range l.companies {
		if l.companies[i].typeID == id {
			out = append(out, i)
		}
	}
	return out
}

// transfers are the pairs of movements of money moved between the two money accounts.
func (l *demoLoader) transfers() []demoMovement {
	transfer := l.dirID(impl.DirPaymentForms, "Bank transfer")
	var out []demoMovement
	for k := range demoTransferCount {
		day := -80 + 16*k
		sum := int64(20+l.rng.IntN(61)) * 10000
		toUSD := k%2 == 0
		from := demoMovement{day: day, sum: sum, direction: 2, typeID: transfer, usd: !toUSD, transfer: true, company: -1, deal: -1}
		to := from
		to.direction, to.usd = 1, toUSD
		from.note, to.note = "Transfer to the USD account", "Transfer from the main account"
		if !toUSD {
			from.note, to.note = "Transfer to the main account", "Transfer from the USD account"
		}
		out = append(out, from, to)
	}
	return out
}

type demoMessage struct {
	mailAccount            int
	folder                 int64
	fromName, fromAddr     string
	toName, toAddr         string
	cc                     string
	subject, body, preview string
	drawn, date            time.Time
	company, contact, deal int
	attachment             bool
	messageID              string
}

func (l *demoLoader) loadMail() error {
	n := len(l.users)
	mailAccounts, err := l.insert("mail_accounts",
		demoInt("user_id", demoEach(l.users, func(u *demoUser) int64 { return u.id })),
		demoText("address", demoEach(l.users, func(u *demoUser) string { return u.login })),
		demoText("display_name", demoEach(l.users, func(u *demoUser) string { return u.name })),
		demoText("smtp_host", demoRepeat("mail.demo.example", n)),
		demoText("smtp_login", demoEach(l.users, func(u *demoUser) string { return u.login })),
		demoText("imap_host", demoRepeat("mail.demo.example", n)),
		demoText("imap_login", demoEach(l.users, func(u *demoUser) string { return u.login })),
		demoTime("created_at", demoRepeat(l.day(-200), n)),
	)
	if err != nil {
		return err
	}
	var msgs []demoMessage
	for range demoMailCount {
		msgs = append(msgs, l.newMessage(l.rng.IntN(n)))
	}
	slices.SortStableFunc(msgs, func(a, b demoMessage) int { return a.drawn.Compare(b.drawn) })
	for i := range msgs {
		msgs[i].messageID = fmt.Sprintf("<demo-%d@demo.example>", i+1)
	}
	_, err = l.insert("mail_messages",
		demoInt("mail_account_id", demoEach(msgs, func(m *demoMessage) int64 { return mailAccounts[m.mailAccount] })),
		demoInt("folder", demoEach(msgs, func(m *demoMessage) int64 { return m.folder })),
		demoText("from_name", demoEach(msgs, func(m *demoMessage) string { return m.fromName })),
		demoText("from_address", demoEach(msgs, func(m *demoMessage) string { return m.fromAddr })),
		demoText("to_name", demoEach(msgs, func(m *demoMessage) string { return m.toName })),
		demoText("to_address", demoEach(msgs, func(m *demoMessage) string { return m.toAddr })),
		demoText("cc", demoEach(msgs, func(m *demoMessage) string { return m.cc })),
		demoText("subject", demoEach(msgs, func(m *demoMessage) string { return m.subject })),
		demoTime("date", demoEach(msgs, func(m *demoMessage) time.Time { return m.date })),
		demoRef("company_id", demoEach(msgs, func(m *demoMessage) int64 {
			if m.company < 0 {
				return 0
			}
			return l.companies[m.company].id
		})),
		demoRef("contact_id", demoEach(msgs, func(m *demoMessage) int64 { return l.contactID(m.contact) })),
		demoRef("deal_id", demoEach(msgs, func(m *demoMessage) int64 { return l.dealID(m.deal) })),
		demoText("message_id", demoEach(msgs, func(m *demoMessage) string { return m.messageID })),
		demoBool("attachment_flag", demoEach(msgs, func(m *demoMessage) bool { return m.attachment })),
		demoText("small_part_of_body", demoEach(msgs, func(m *demoMessage) string { return m.preview })),
		demoText("body", demoEach(msgs, func(m *demoMessage) string { return m.body })),
		demoNullText("delivery_state", demoEach(msgs, func(m *demoMessage) string {
			if m.folder == 2 {
				return "sent"
			}
			return ""
		})),
		demoInt("attempts", demoEach(msgs, func(m *demoMessage) int64 { return m.folder - 1 })),
		demoRef("created_by", demoEach(msgs, func(m *demoMessage) int64 {
			if m.folder == 2 {
				return l.users[m.mailAccount].id
			}
			return 0
		})),
		demoTime("created_at", demoEach(msgs, func(m *demoMessage) time.Time { return m.date })),
	)
	return err
}

// newMessage draws a message between a user and one of the user's counterparties
// (or a contact person of one), received or sent.
func (l *demoLoader) newMessage(u int) demoMessage {
	user := &l.users[u]
	ci := demoPick(l.rng, l.byUser[u])
	if active := l.withDeals(l.byUser[u]); len(active) > 0 && l.chance(0.5) {
		ci = demoPick(l.rng, active)
	}
	c := &l.companies[ci]
	m := demoMessage{mailAccount: u, folder: 1, company: ci, contact: -1, deal: -1}
	if l.chance(0.4) {
		m.folder = 2
	}
	e := &l.emails[demoPick(l.rng, c.ownEmails)]
	if len(c.contacts) > 0 && l.chance(0.55) {
		m.contact = demoPick(l.rng, c.contacts)
		e = l.contactEmail(m.contact)
	}
	if len(c.deals) > 0 && l.chance(0.5) {
		m.deal = demoPick(l.rng, c.deals)
	}
	invoice := -1
	if len(c.invoices) > 0 {
		invoice = demoPick(l.rng, c.invoices)
	}
	lo := max(-60, c.createdDay)
	m.drawn = l.workTime(lo + l.rng.IntN(1-lo))
	tpl := l.pickTemplate(m.folder, m.deal >= 0, invoice >= 0)
	if tpl.needs == "invoice" { // not before the invoice
		m.drawn = l.workTime(min(0, l.docs[invoice].day+l.rng.IntN(4)))
	}
	m.date = l.clampTime(m.drawn, c.createdAt, l.now)
	hello := "Hello,"
	if e.first != "" {
		hello = "Hello " + e.first + ","
	}
	userFirst, _, _ := strings.Cut(user.name, " ")
	vars := []string{
		"{hello}", hello, "{user}", user.name, "{userFirst}", userFirst, "{name}", e.name,
		"{address}", c.address + ", " + c.city, "{weekday}", demoWorkday(m.date.AddDate(0, 0, 2)).Weekday().String(),
	}
	if m.deal >= 0 {
		vars = append(vars, "{deal}", l.deals[m.deal].name)
	}
	if invoice >= 0 {
		vars = append(vars, "{invoice}", l.docs[invoice].number)
	}
	r := strings.NewReplacer(vars...)
	m.subject = r.Replace(tpl.subject)
	var text, body []string
	for _, p := range tpl.paras {
		p = r.Replace(p)
		text = append(text, p)
		body = append(body, "<p>"+html.EscapeString(p)+"</p>")
	}
	m.body = strings.Join(body, "\n")
	m.preview = mailer.TruncateRunes(strings.Join(text, " "), mailer.PreviewLength)
	m.attachment = tpl.attachment || l.chance(0.1)
	if m.folder == 1 {
		m.fromName, m.fromAddr, m.toName, m.toAddr = e.name, e.email, user.name, user.login
	} else {
		m.fromName, m.fromAddr, m.toName, m.toAddr = user.name, user.login, e.name, e.email
		if l.chance(0.1) {
			m.cc = l.users[(u+1)%len(l.users)].login
		}
	}
	// Some messages stay unlinked, so that the mail list has both kinds.
	if l.chance(0.08) {
		m.company, m.contact, m.deal = -1, -1, -1
	}
	return m
}

// contactEmail is the e-mail of a contact person.
func (l *demoLoader) contactEmail(contact int) *demoEmail {
	for i := len(l.emails) - 1; i >= 0; i-- {
		if l.emails[i].contact == contact {
			return &l.emails[i]
		}
	}
	panic(fmt.Sprintf("demo: contact %d has no e-mail", contact))
}

type demoMailTemplate struct {
	folder     int64
	needs      string // "deal" or "invoice" when the text names one
	subject    string
	paras      []string
	attachment bool
}

func (l *demoLoader) pickTemplate(folder int64, hasDeal, hasInvoice bool) demoMailTemplate {
	var fit []demoMailTemplate
	for _, t := range demoMailTemplates() {
		if t.folder == folder && (t.needs == "" || t.needs == "deal" && hasDeal || t.needs == "invoice" && hasInvoice) {
			fit = append(fit, t)
		}
	}
	return demoPick(l.rng, fit)
}

func (l *demoLoader) loadKPIPlans() error {
	type plan struct {
		user  int
		month time.Time
	}
	var plans []plan
	for u := range l.users {
		if !l.users[u].plan {
			continue
		}
		for k := -1; k <= 1; k++ {
			plans = append(plans, plan{u, time.Date(l.today.Year(), l.today.Month()+time.Month(k), 1, 0, 0, 0, 0, l.loc)})
		}
	}
	ids, err := l.insert("kpi_plans",
		demoInt("user_id", demoEach(plans, func(p *plan) int64 { return l.users[p.user].id })),
		demoDate("month", demoEach(plans, func(p *plan) time.Time { return p.month })),
		demoTime("created_at", demoEach(plans, func(p *plan) time.Time { return l.clampTime(p.month.AddDate(0, 0, -3), time.Time{}, l.now) })),
	)
	if err != nil {
		return err
	}
	metrics := demoKPIMetrics()
	var planIDs []int64
	var names, keys []string
	var values []int64
	for i := range plans {
		picked := l.rng.Perm(len(metrics))[:3+l.rng.IntN(3)]
		slices.Sort(picked)
		for _, k := range picked {
			m := metrics[k]
			steps := (m.max - m.min) / m.step
			planIDs = append(planIDs, ids[i])
			names = append(names, m.name)
			keys = append(keys, m.metric)
			values = append(values, int64(m.min+m.step*l.rng.IntN(steps+1))*100)
		}
	}
	_, err = l.insert("kpi_plan_items",
		demoInt("plan_id", planIDs),
		demoText("name", names),
		demoText("metric", keys),
		demoAmount("plan_value", values),
	)
	return err
}

func (l *demoLoader) loadFilters() error {
	client := l.dirID(impl.DirCompanyTypes, "Client")
	_, err := l.insert("user_filters",
		demoInt("module", []int64{impl.ModuleCompanies, impl.ModuleCompanies, impl.ModuleMail}),
		demoText("name", []string{"Clients", "VIP counterparties", "Mail about invoices"}),
		demoJSONCol("definition", []string{
			demoJSON(map[string]any{"type_id": client}),
			demoJSON(map[string]any{"tags": "vip"}),
			demoJSON(map[string]any{"subject": "invoice"}),
		}),
		demoInt("created_by", demoRepeat(l.users[0].id, 3)),
		demoTime("created_at", demoRepeat(l.day(-30), 3)),
	)
	return err
}

// Random draws.

func (l *demoLoader) chance(p float64) bool { return l.rng.Float64() < p }

// weighted draws an index with probability proportional to its weight.
func (l *demoLoader) weighted(weights []int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	n := l.rng.IntN(total)
	for i, w := range weights {
		if n < w {
			return i
		}
		n -= w
	}
	return len(weights) - 1
}

// pickSome draws n different elements, in the order of the list.
func (l *demoLoader) pickSome(list []string, n int) []string {
	idx := l.rng.Perm(len(list))[:n]
	slices.Sort(idx)
	out := make([]string, n)
	for i, k := range idx {
		out[i] = list[k]
	}
	return out
}

// digits fills each '#' of the pattern with a random digit.
func (l *demoLoader) digits(pattern string) string {
	b := []byte(pattern)
	for i, ch := range b {
		if ch == '#' {
			b[i] = byte('0' + l.rng.IntN(10))
		}
	}
	return string(b)
}

func demoPick[T any](rng *rand.Rand, list []T) T {
	return list[rng.IntN(len(list))]
}

// Dates, all in the account time zone and relative to today.

// day is the midnight of the day offset days from today.
func (l *demoLoader) day(offset int) time.Time { return l.today.AddDate(0, 0, offset) }

// workTime draws a time of the working day offset days from today.
func (l *demoLoader) workTime(offset int) time.Time {
	d := l.day(offset)
	return time.Date(d.Year(), d.Month(), d.Day(), 8+l.rng.IntN(10), 15*l.rng.IntN(4), 0, 0, l.loc)
}

// pastWorkTimeAt is the given hour of a day, but never after now.
func (l *demoLoader) pastWorkTimeAt(offset, hour int) time.Time {
	return l.clampTime(l.day(offset).Add(time.Duration(hour)*time.Hour), time.Time{}, l.now)
}

func (l *demoLoader) clampTime(t, lo, hi time.Time) time.Time {
	if t.Before(lo) {
		t = lo
	}
	if t.After(hi) {
		t = hi
	}
	return t
}

// demoWorkday is the day itself, or the Monday after a weekend day.
func demoWorkday(t time.Time) time.Time {
	switch t.Weekday() {
	case time.Saturday:
		return t.AddDate(0, 0, 2)
	case time.Sunday:
		return t.AddDate(0, 0, 1)
	}
	return t
}

// Text helpers.

// demoUniqueEmail returns local@domain, numbered when the address is taken.
func demoUniqueEmail(seen map[string]bool, local, domain string) string {
	email := local + "@" + domain
	for n := 2; seen[email]; n++ {
		email = local + strconv.Itoa(n) + "@" + domain
	}
	seen[email] = true
	return email
}

// demoSlug turns a company name into a host name label.
func demoSlug(name string) string {
	return strings.ToLower(strings.Join(strings.Fields(name), "-"))
}

func demoJSON(v map[string]any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("demo: %v", err)) // only maps of strings and numbers come here
	}
	return string(b)
}
