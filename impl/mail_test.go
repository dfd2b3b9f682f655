package impl_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	gomail "github.com/emersion/go-message/mail"

	"github.com/crmservice/crm/impl"
)

// mailSetup is an account with mail accounts for its users, two counterparties
// (Contoso of the member, Fabrikam of the other member, in another department)
// with contact persons and deals, and a second account.
type mailSetup struct {
	e                       *env
	w, globex               *world
	member, admin, head     int64 // mail accounts of those users
	peer, disabled, globexM int64
	contoso, fabrikam       int64
	janis, mari, olga       int64 // contacts: janis and mari of Contoso, olga of Fabrikam
	contosoDeal, fabDeal    int64
	globexCompany           int64
	globexContact, globexDl int64
}

func newMailSetup(t *testing.T) *mailSetup {
	t.Helper()
	e := newEnv(t)
	s := &mailSetup{e: e, w: e.newWorld(t, "acme"), globex: e.newWorld(t, "globex")}
	box := testSecretBox(t)
	noServer := func(id int64, addr string) int64 {
		return mailAccount(t, e, box, id, addr, smtpServerless(), imapServerless())
	}
	s.member = noServer(s.w.member.id, "member@acme.example")
	s.admin = noServer(s.w.admin.id, "admin@acme.example")
	s.head = noServer(s.w.head.id, "head@acme.example")
	s.peer = noServer(s.w.peer.id, "peer@acme.example")
	s.disabled = noServer(s.w.member.id, "old@acme.example")
	if _, err := e.db.Exec(`UPDATE mail_accounts SET active = false WHERE id = $1`, s.disabled); err != nil {
		t.Fatal(err)
	}
	s.globexM = noServer(s.globex.member.id, "member@globex.example")

	s.contoso = insertCompany(t, e, s.w.member.token, fullCompany(s.w, "info@contoso.example"))
	fab := fullCompany(s.w, "info@fabrikam.example")
	fab["name"], fab["user_id"] = "Fabrikam", s.w.other.id
	fab["Contacts"] = []any{map[string]any{"first_name": "Olga", "Emails": []any{map[string]any{"email": "olga@fabrikam.example"}}}}
	s.fabrikam = insertCompany(t, e, s.w.other.token, fab)
	gx := fullCompany(s.globex, "info@globex.example")
	s.globexCompany = insertCompany(t, e, s.globex.member.token, gx)
	var ids []int64
	if err := e.db.Select(&ids, `SELECT id FROM contacts WHERE company_id IN ($1, $2, $3) ORDER BY company_id, id`,
		s.contoso, s.fabrikam, s.globexCompany); err != nil || len(ids) != 5 {
		t.Fatalf("contacts %v: %v", ids, err)
	}
	s.janis, s.mari, s.olga, s.globexContact = ids[0], ids[1], ids[2], ids[3]
	s.contosoDeal = insertDeal(t, e, s.w, s.contoso, s.w.member.id)
	s.fabDeal = insertDeal(t, e, s.w, s.fabrikam, s.w.other.id)
	s.globexDl = insertDeal(t, e, s.globex, s.globexCompany, s.globex.member.id)
	return s
}

func smtpServerless() impl.MailServerInput { return impl.MailServerInput{} }
func imapServerless() impl.MailServerInput { return impl.MailServerInput{} }

// insertDeal stores a deal directly: POST /deal/insert is another issue's work.
func insertDeal(t *testing.T, e *env, w *world, companyID, userID int64) int64 {
	t.Helper()
	var id int64
	err := e.db.Get(&id, `
		INSERT INTO deals (account_id, name, company_id, type_id, status_id, user_id, date_start, date_finish)
		VALUES ($1, 'Deal', $2, $3, $4, $5, current_date, current_date + 30) RETURNING id`,
		w.accountID, companyID, w.dirs[40][0], w.dirs[41][0], userID)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// storedMail is a row of mail_messages as the tests read it.
type storedMail struct {
	ID              int64     `db:"id"`
	MailAccountID   int64     `db:"mail_account_id"`
	Folder          int       `db:"folder"`
	FromName        string    `db:"from_name"`
	FromAddress     string    `db:"from_address"`
	ToName          string    `db:"to_name"`
	ToAddress       string    `db:"to_address"`
	Cc              string    `db:"cc"`
	Bcc             string    `db:"bcc"`
	Subject         string    `db:"subject"`
	Date            time.Time `db:"date"`
	CompanyID       *int64    `db:"company_id"`
	ContactID       *int64    `db:"contact_id"`
	DealID          *int64    `db:"deal_id"`
	MessageID       string    `db:"message_id"`
	AttachmentFlag  bool      `db:"attachment_flag"`
	SmallPartOfBody string    `db:"small_part_of_body"`
	Body            string    `db:"body"`
	DeliveryState   *string   `db:"delivery_state"`
	Attempts        int       `db:"attempts"`
	LastError       string    `db:"last_error"`
	Raw             []byte    `db:"raw_message"`
	CreatedBy       *int64    `db:"created_by"`
}

const storedMailColumns = `id, mail_account_id, folder, from_name, from_address, to_name, to_address, cc, bcc, subject, date,
	company_id, contact_id, deal_id, message_id, attachment_flag, small_part_of_body, body, delivery_state, attempts,
	last_error, raw_message, created_by`

func (e *env) lastMail(t *testing.T) storedMail {
	t.Helper()
	var m storedMail
	if err := e.db.Get(&m, `SELECT `+storedMailColumns+` FROM mail_messages ORDER BY id DESC LIMIT 1`); err != nil {
		t.Fatal(err)
	}
	return m
}

func eqID(a, b *int64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

func showID(p *int64) string {
	if p == nil {
		return "null"
	}
	return itoa(*p)
}

func TestMailSend(t *testing.T) {
	s := newMailSetup(t)
	e, w := s.e, s.w

	t.Run("OK: stored at once in sent, queued, linked, journaled", func(t *testing.T) {
		html := "<h1>Offer</h1><p>Hello Janis,<br>the price is <b>100&nbsp;EUR</b>.</p><ul><li>one</li><li>two</li></ul>"
		sendMail(t, e, w.member.token, map[string]any{
			"account_id": itoa(s.member), "to_address": "Janis Ozols <janis.info@contoso.example>",
			"cc": "boss@contoso.example, Peer Person <peer@acme.example>", "bcc": "audit@acme.example",
			"subject": b64("Offer – №1 ✓"), "body": b64(html),
		})
		m := e.lastMail(t)
		want := storedMail{
			ID: m.ID, MailAccountID: s.member, Folder: 2, FromName: "Box member@acme.example", FromAddress: "member@acme.example",
			ToName: "Janis Ozols", ToAddress: "janis.info@contoso.example", Cc: "boss@contoso.example, peer@acme.example",
			Bcc: "audit@acme.example", Subject: "Offer – №1 ✓", Date: m.Date, CompanyID: &s.contoso, ContactID: &s.janis,
			MessageID: m.MessageID, SmallPartOfBody: "Offer Hello Janis, the price is 100 EUR. - one - two", Body: html,
			DeliveryState: m.DeliveryState, Raw: m.Raw, CreatedBy: &w.member.id,
		}
		if m.MailAccountID != want.MailAccountID || m.Folder != 2 || m.FromName != want.FromName || m.FromAddress != want.FromAddress ||
			m.ToName != want.ToName || m.ToAddress != want.ToAddress || m.Cc != want.Cc || m.Bcc != want.Bcc ||
			m.Subject != want.Subject || !eqID(m.CompanyID, want.CompanyID) || !eqID(m.ContactID, want.ContactID) ||
			m.DealID != nil || m.AttachmentFlag || m.SmallPartOfBody != want.SmallPartOfBody || m.Body != html ||
			m.Attempts != 0 || m.LastError != "" || !eqID(m.CreatedBy, want.CreatedBy) {
			m.Raw, want.Raw = nil, nil
			t.Errorf("stored\n%+v\nwant\n%+v", m, want)
		}
		if m.DeliveryState == nil || *m.DeliveryState != "queued" || m.Raw == nil {
			t.Errorf("delivery state %v, raw message %d bytes: want queued with the MIME text", m.DeliveryState, len(m.Raw))
		}
		if !regexp.MustCompile(`^<crm\.[0-9a-f]{32}@acme\.example>$`).MatchString(m.MessageID) {
			t.Errorf("message_id %q", m.MessageID)
		}
		if d := time.Since(m.Date); d < 0 || d > time.Minute {
			t.Errorf("date %v is not now", m.Date)
		}
		if n := e.count(t, `SELECT count(*) FROM mail_messages WHERE account_id = $1 AND id = $2 AND next_attempt_at <= now()`, w.accountID, m.ID); n != 1 {
			t.Error("the message is not due for delivery at once")
		}

		var j struct {
			UserID  int64           `db:"user_id"`
			TokenID *int64          `db:"token_id"`
			Changes json.RawMessage `db:"changes"`
		}
		if err := e.db.Get(&j, `SELECT user_id, token_id, changes FROM journal
			WHERE account_id = $1 AND module = 24 AND entity = 'mail' AND record_id = $2 AND action = 'send'`, w.accountID, m.ID); err != nil {
			t.Fatalf("journal row: %v", err)
		}
		changes := decode[map[string]any](t, string(j.Changes))
		if j.UserID != w.member.id || j.TokenID == nil || changes["subject"] != "Offer – №1 ✓" ||
			changes["to_address"] != "janis.info@contoso.example" || changes["bcc"] != "audit@acme.example" ||
			changes["message_id"] != m.MessageID || changes["company_id"] != float64(s.contoso) || changes["body"] != nil {
			t.Errorf("journal %+v %s", j, j.Changes)
		}

		// The MIME text that will go out.
		r, err := gomail.CreateReader(bytes.NewReader(m.Raw))
		if err != nil {
			t.Fatal(err)
		}
		subject, _ := r.Header.Subject()
		to, _ := r.Header.AddressList("To")
		cc, _ := r.Header.AddressList("Cc")
		id, _ := r.Header.MessageID()
		date, _ := r.Header.Date()
		ct, _, _ := r.Header.ContentType()
		if subject != "Offer – №1 ✓" || len(to) != 1 || to[0].Name != "Janis Ozols" || len(cc) != 2 || r.Header.Get("Bcc") != "" ||
			"<"+id+">" != m.MessageID || !date.Equal(m.Date) || ct != "multipart/alternative" {
			t.Errorf("header: subject %q to %v cc %v bcc %q id %q date %v type %q", subject, to, cc, r.Header.Get("Bcc"), id, date, ct)
		}
		var parts []string
		for {
			p, err := r.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			pct, params, _ := p.Header.(*gomail.InlineHeader).ContentType()
			body, _ := io.ReadAll(p.Body)
			parts = append(parts, pct+";"+params["charset"]+"\n"+strings.ReplaceAll(string(body), "\r\n", "\n"))
		}
		wantParts := []string{
			"text/plain;utf-8\nOffer\n\nHello Janis,\nthe price is 100 EUR.\n\n- one\n- two",
			"text/html;utf-8\n" + html,
		}
		if strings.Join(parts, "\n--\n") != strings.Join(wantParts, "\n--\n") {
			t.Errorf("parts\n%q\nwant\n%q", parts, wantParts)
		}
	})

	t.Run("OK: URL-safe and unpadded Base64", func(t *testing.T) {
		// "~~~?" is fn5+Pw== in the standard alphabet.
		sendMail(t, e, w.member.token, map[string]any{"account_id": itoa(s.member), "to_address": "x@elsewhere.example",
			"subject": "fn5-Pw", "body": base64.RawStdEncoding.EncodeToString([]byte("<p>ok</p>"))})
		if m := e.lastMail(t); m.Subject != "~~~?" || m.Body != "<p>ok</p>" || m.CompanyID != nil || m.ContactID != nil {
			t.Errorf("stored %q %q links %s %s", m.Subject, m.Body, showID(m.CompanyID), showID(m.ContactID))
		}
	})

	t.Run("OK: empty subject and body", func(t *testing.T) {
		sendMail(t, e, w.member.token, map[string]any{"account_id": itoa(s.member), "to_address": "x@elsewhere.example", "subject": "", "body": ""})
		if m := e.lastMail(t); m.Subject != "" || m.Body != "" || m.SmallPartOfBody != "" {
			t.Errorf("stored %+v", m)
		}
	})

	t.Run("OK: a long body gives a preview of 255 characters", func(t *testing.T) {
		body := "<p>" + strings.Repeat("ā", 300) + "</p>"
		sendMail(t, e, w.member.token, map[string]any{"account_id": itoa(s.member), "to_address": "x@elsewhere.example", "subject": b64("x"), "body": b64(body)})
		if m := e.lastMail(t); m.SmallPartOfBody != strings.Repeat("ā", 255) {
			t.Errorf("preview of %d characters", len([]rune(m.SmallPartOfBody)))
		}
	})

	valid := func(over map[string]any) map[string]any {
		m := map[string]any{"account_id": itoa(s.member), "to_address": "janis.info@contoso.example", "subject": b64("Hi"), "body": b64("<p>x</p>")}
		for k, v := range over {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return m
	}
	nothingStored := func(t *testing.T, before [2]int) {
		t.Helper()
		if after := mailCounts(t, e); after != before {
			t.Errorf("mail messages and journal rows %v, before %v", after, before)
		}
	}

	t.Run("bad input is refused and stores nothing", func(t *testing.T) {
		many := make([]string, 101)
		for i := range many {
			many[i] = "r" + itoa(int64(i)) + "@x.example"
		}
		for _, tc := range []struct {
			name string
			mail map[string]any
			want string
		}{
			{"subject not Base64", valid(map[string]any{"subject": "%%%"}), "mail.subject: not valid Base64"},
			{"body not Base64", valid(map[string]any{"body": "PHA+" + "*"}), "mail.body: not valid Base64"},
			{"subject not UTF-8", valid(map[string]any{"subject": base64.StdEncoding.EncodeToString([]byte{0xff, 0xfe})}), "mail.subject: the decoded text is not UTF-8"},
			{"body with NUL", valid(map[string]any{"body": b64("a\x00b")}), "mail.body: the decoded text contains a NUL character"},
			{"subject header injection CRLF", valid(map[string]any{"subject": b64("Hi\r\nBcc: victim@x.example")}), "mail.subject: must not contain line breaks"},
			{"subject header injection LF", valid(map[string]any{"subject": b64("Hi\nX-Evil: 1")}), "mail.subject: must not contain line breaks"},
			{"to header injection", valid(map[string]any{"to_address": "a@x.example\r\nBcc: victim@x.example"}), "mail.to_address: must not contain line breaks"},
			{"cc header injection", valid(map[string]any{"cc": "a@x.example\nBcc: victim@x.example"}), "mail.cc: must not contain line breaks"},
			{"bcc header injection", valid(map[string]any{"bcc": "a@x.example\rX: y"}), "mail.bcc: must not contain line breaks"},
			{"to with a control character", valid(map[string]any{"to_address": "a@x.example\x01"}), "mail.to_address: must not contain control characters"},
			{"malformed to", valid(map[string]any{"to_address": "not an address"}), "mail.to_address: not a valid address"},
			{"to without a dot in the domain", valid(map[string]any{"to_address": "a@localhost"}), "mail.to_address: address 1 is not of the form"},
			{"non-ASCII to", valid(map[string]any{"to_address": "jānis@x.example"}), "mail.to_address: address 1 is not of the form"},
			{"second cc malformed", valid(map[string]any{"cc": "a@x.example, b@y"}), "mail.cc: address 2 is not of the form"},
			{"empty list", valid(map[string]any{"to_address": " , "}), "mail.to_address"},
			{"too many recipients", valid(map[string]any{"bcc": strings.Join(many, ",")}), "mail: 102 recipients, at most 100 are allowed"},
			{"account id not a number", valid(map[string]any{"account_id": "12a"}), `field "mail.account_id"`},
			{"account id a number", valid(map[string]any{"account_id": 12}), `field "mail.account_id"`},
			{"subject missing", valid(map[string]any{"subject": nil}), "subject"},
			{"unknown field", valid(map[string]any{"from": "x@y.example"}), "from"},
			{"company id not a number", valid(map[string]any{"company_id": "1"}), `field "mail.company_id"`},
			{"body over 10,000,000 characters", valid(map[string]any{"body": strings.Repeat("QUFB", 2_500_001)}), `field "mail.body": maximum string length is 10000000`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				before := mailCounts(t, e)
				expectError(t, e.post(t, w.member.token, "/mail/send", map[string]any{"mail": tc.mail}), "400", tc.want, "")
				nothingStored(t, before)
			})
		}
		t.Run("request over 10 MiB", func(t *testing.T) {
			before := mailCounts(t, e)
			body := `{"mail":{"account_id":"1","to_address":"a@x.example","subject":"","body":"` + strings.Repeat("A", 11<<20) + `"}}`
			expectError(t, e.post(t, w.member.token, "/mail/send", body), "400", "request body is larger than 10485760 bytes", "")
			nothingStored(t, before)
		})
		t.Run("not an object", func(t *testing.T) {
			expectError(t, e.post(t, w.member.token, "/mail/send", `{"mail": "x"}`), "400", "mail", "")
		})
	})

	t.Run("only the owner of a mail account sends through it", func(t *testing.T) {
		for _, tc := range []struct {
			name, token string
			account     int64
			code, want  string
		}{
			{"admin through a member's account", w.admin.token, s.member, "404", "mail.account_id: mail account " + itoa(s.member) + " not found"},
			{"head through a member of the department", w.head.token, s.member, "404", "not found"},
			{"peer through a peer's account", w.peer.token, s.member, "404", "not found"},
			{"member through the head's account", w.member.token, s.head, "404", "not found"},
			{"another account's user", s.globex.member.token, s.member, "404", "not found"},
			{"another account's admin", s.globex.admin.token, s.member, "404", "not found"},
			{"unknown mail account", w.member.token, 987654321, "404", "mail account 987654321 not found"},
			{"disabled mail account", w.member.token, s.disabled, "400", "mail.account_id: mail account " + itoa(s.disabled) + " is disabled"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				before := mailCounts(t, e)
				expectError(t, e.post(t, tc.token, "/mail/send", map[string]any{"mail": valid(map[string]any{"account_id": itoa(tc.account)})}), tc.code, tc.want, "")
				nothingStored(t, before)
			})
		}
		sendMail(t, e, w.admin.token, valid(map[string]any{"account_id": itoa(s.admin)}))
		sendMail(t, e, s.globex.member.token, valid(map[string]any{"account_id": itoa(s.globexM), "to_address": "info@globex.example"}))
		if m := e.lastMail(t); !eqID(m.CompanyID, &s.globexCompany) {
			t.Errorf("globex message linked to %s, want its own counterparty %d", showID(m.CompanyID), s.globexCompany)
		}
	})

	t.Run("links", func(t *testing.T) {
		for _, tc := range []struct {
			name                   string
			token                  string
			mail                   map[string]any
			company, contact, deal *int64
		}{
			{"all three given", w.member.token, valid(map[string]any{"to_address": "x@elsewhere.example", "company_id": s.contoso, "contact_id": s.mari, "deal_id": s.contosoDeal}),
				&s.contoso, &s.mari, &s.contosoDeal},
			{"a contact person brings the counterparty", w.member.token, valid(map[string]any{"to_address": "x@elsewhere.example", "contact_id": s.mari}),
				&s.contoso, &s.mari, nil},
			{"a deal brings the counterparty, the address the contact person", w.member.token, valid(map[string]any{"deal_id": s.contosoDeal}),
				&s.contoso, &s.janis, &s.contosoDeal},
			{"a counterparty given, the contact person found by a cc address", w.member.token,
				valid(map[string]any{"to_address": "info@contoso.example", "cc": "JANIS.info@contoso.example", "company_id": s.contoso}),
				&s.contoso, &s.janis, nil},
			{"the counterparty's own e-mail", w.member.token, valid(map[string]any{"to_address": "Info@Contoso.example"}), &s.contoso, nil, nil},
			{"the first address that matches wins", w.member.token, valid(map[string]any{"to_address": "nobody@x.example, olga@fabrikam.example, info@contoso.example"}),
				&s.fabrikam, &s.olga, nil},
			{"found by address whoever is responsible", w.member.token, valid(map[string]any{"to_address": "info@fabrikam.example"}), &s.fabrikam, nil, nil},
			{"an admin links any counterparty", w.admin.token, valid(map[string]any{"account_id": itoa(s.admin), "to_address": "x@elsewhere.example", "company_id": s.fabrikam, "deal_id": s.fabDeal}),
				&s.fabrikam, nil, &s.fabDeal},
			{"no match", w.member.token, valid(map[string]any{"to_address": "x@elsewhere.example"}), nil, nil, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				sendMail(t, e, tc.token, tc.mail)
				m := e.lastMail(t)
				if !eqID(m.CompanyID, tc.company) || !eqID(m.ContactID, tc.contact) || !eqID(m.DealID, tc.deal) {
					t.Errorf("links %s %s %s, want %s %s %s", showID(m.CompanyID), showID(m.ContactID), showID(m.DealID),
						showID(tc.company), showID(tc.contact), showID(tc.deal))
				}
			})
		}
		if _, err := e.db.Exec(`UPDATE companies SET deleted_at = now() WHERE id = $1`, s.fabrikam); err != nil {
			t.Fatal(err)
		}
		t.Run("a deleted counterparty is not found by address", func(t *testing.T) {
			sendMail(t, e, w.member.token, valid(map[string]any{"to_address": "olga@fabrikam.example"}))
			if m := e.lastMail(t); m.CompanyID != nil || m.ContactID != nil {
				t.Errorf("linked to %s %s", showID(m.CompanyID), showID(m.ContactID))
			}
		})
		if _, err := e.db.Exec(`UPDATE companies SET deleted_at = NULL WHERE id = $1`, s.fabrikam); err != nil {
			t.Fatal(err)
		}

		for _, tc := range []struct {
			name, token string
			mail        map[string]any
			want        string
		}{
			{"contact person of another counterparty", w.member.token, valid(map[string]any{"company_id": s.contoso, "contact_id": s.olga}),
				"mail.contact_id: the contact person belongs to another counterparty"},
			{"deal of another counterparty", w.admin.token, valid(map[string]any{"account_id": itoa(s.admin), "company_id": s.contoso, "deal_id": s.fabDeal}),
				"mail.deal_id: the deal belongs to another counterparty"},
			{"contact person and deal of different counterparties", w.admin.token, valid(map[string]any{"account_id": itoa(s.admin), "contact_id": s.janis, "deal_id": s.fabDeal}),
				"mail.deal_id: the deal belongs to another counterparty"},
			{"unknown counterparty", w.member.token, valid(map[string]any{"company_id": 987654321}), "mail.company_id: no such counterparty"},
			{"unknown contact person", w.member.token, valid(map[string]any{"contact_id": 987654321}), "mail.contact_id: no such contact person"},
			{"unknown deal", w.member.token, valid(map[string]any{"deal_id": 987654321}), "mail.deal_id: no such deal"},
			{"counterparty of another account", w.member.token, valid(map[string]any{"company_id": s.globexCompany}), "mail.company_id: no such counterparty"},
			{"contact person of another account", w.member.token, valid(map[string]any{"contact_id": s.globexContact}), "mail.contact_id: no such contact person"},
			{"deal of another account", w.member.token, valid(map[string]any{"deal_id": s.globexDl}), "mail.deal_id: no such deal"},
			{"counterparty the member may not see", w.member.token, valid(map[string]any{"company_id": s.fabrikam}), "mail.company_id: no such counterparty"},
			{"counterparty of another department for a head", w.head.token, valid(map[string]any{"account_id": itoa(s.head), "company_id": s.fabrikam}), "mail.company_id: no such counterparty"},
			{"contact person of a counterparty the member may not see", w.member.token, valid(map[string]any{"contact_id": s.olga}), "mail.company_id: no such counterparty"},
			{"deal the member may not see", w.member.token, valid(map[string]any{"deal_id": s.fabDeal}), "mail.deal_id: no such deal"},
			{"globex linking acme's counterparty", s.globex.member.token, valid(map[string]any{"account_id": itoa(s.globexM), "company_id": s.contoso}), "mail.company_id: no such counterparty"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				before := mailCounts(t, e)
				expectError(t, e.post(t, tc.token, "/mail/send", map[string]any{"mail": tc.mail}), "400", tc.want, "")
				nothingStored(t, before)
			})
		}
		t.Run("a head sees the counterparties of the department", func(t *testing.T) {
			sendMail(t, e, w.head.token, valid(map[string]any{"account_id": itoa(s.head), "company_id": s.contoso, "deal_id": s.contosoDeal}))
		})
	})

	t.Run("reply envelope for the contract", func(t *testing.T) {
		r := e.post(t, w.member.token, "/mail/send", map[string]any{"mail": valid(nil)})
		got := decode[map[string]any](t, string(r.Raw))
		want := map[string]any{"status": "success", "error": "", "code": "0", "rows": 0.0, "pages": 0.0, "page": 0.0, "value": ""}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("reply %s", r.Raw)
		}
	})
}

// mailCounts is the number of mail messages and of journal rows.
func mailCounts(t *testing.T, e *env) [2]int {
	t.Helper()
	return [2]int{e.count(t, `SELECT count(*) FROM mail_messages`), e.count(t, `SELECT count(*) FROM journal`)}
}
