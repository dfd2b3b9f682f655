package main

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/crmservice/crm/db"
	"github.com/crmservice/crm/db/dbtest"
	"github.com/crmservice/crm/impl"
)

// TestSettingsCommands runs the field, filter, contact-social and
// money-account commands against a database and checks what they stored.
func TestSettingsCommands(t *testing.T) {
	url := dbtest.NewURL(t)
	t.Setenv("DATABASE_URL", url)
	ctx := context.Background()
	pool, err := db.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	account := mustCommand(t, "account", "create", "--name", "Settings", "--currency", "EUR", "--tz", "UTC")

	field := mustCommand(t, "field", "add", "--account", account, "--module", "1", "--name", "segment", "--title", "Segment")
	mustCommand(t, "field", "add", "--account", account, "--module", "20", "--name", "signed", "--type", "date", "-o", "json")
	var fields []impl.Field
	if err := json.Unmarshal([]byte(mustCommand(t, "field", "list", "--account", account, "-o", "json")), &fields); err != nil ||
		len(fields) != 2 || fields[0].Name != "segment" || fields[1].Type != "date" {
		t.Errorf("field list: %+v (%v)", fields, err)
	}
	if out := mustCommand(t, "field", "list", "--account", account); !strings.Contains(out, "ADD_segment") {
		t.Errorf("field list as text:\n%s", out)
	}
	failing(t, `module 1 already has the field "segment"`, "field", "add", "--account", account, "--module", "1", "--name", "segment")
	mustCommand(t, "field", "remove", "--account", account, "--id", field)
	failing(t, "field "+field+" not found", "field", "remove", "--account", account, "--id", field)

	filter := mustCommand(t, "filter", "add", "--account", account, "--module", "20", "--name", "Big", "--definition", `{"tags": "big"}`)
	if out := mustCommand(t, "filter", "list", "--account", account); !strings.Contains(out, `{"tags": "big"}`) {
		t.Errorf("filter list:\n%s", out)
	}
	failing(t, "definition: filter segment is not supported by module 20", "filter", "add", "--account", account, "--module", "20",
		"--name", "x", "--definition", `{"segment": 1}`)
	mustCommand(t, "filter", "remove", "--account", account, "--id", filter)

	money := mustCommand(t, "money-account", "create", "--account", account, "--name", "Bank", "--currency", "USD")
	if out := mustCommand(t, "money-account", "list", "--account", account, "-o", "json"); !strings.Contains(out, `"id":`+money) ||
		!strings.Contains(out, `"currency":"USD"`) {
		t.Errorf("money-account list: %s", out)
	}
	failing(t, `currency "usd": three capital letters (ISO 4217), such as EUR`, "money-account", "create", "--account", account,
		"--name", "x", "--currency", "usd")

	var contact int64
	accountID, err := strconv.ParseInt(account, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	typeID, err := impl.AddDirectoryValue(ctx, pool, impl.DirectoryValueInput{AccountID: accountID, Code: impl.DirCompanyTypes, Name: "Client"})
	if err != nil {
		t.Fatal(err)
	}
	user, err := impl.CreateUser(ctx, pool, impl.UserInput{AccountID: accountID, Name: "A", Login: "a@settings.example", Role: impl.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.Get(&contact, `WITH c AS (INSERT INTO companies (account_id, name, type_id, user_id) VALUES ($1, 'C', $2, $3) RETURNING id)
		INSERT INTO contacts (account_id, company_id, first_name) SELECT $1, id, 'Anna' FROM c RETURNING id`, accountID, typeID, user); err != nil {
		t.Fatal(err)
	}
	c := itoa(contact)
	mustCommand(t, "contact-social", "set", "--account", account, "--contact", c, "--network", "LinkedIn=https://linkedin.example/in/anna",
		"--network", "telegram=@anna")
	var nets []string
	if err := pool.Select(&nets, `SELECT network || ' ' || address FROM contact_socials WHERE contact_id = $1 ORDER BY id`, contact); err != nil ||
		strings.Join(nets, "|") != "linkedin https://linkedin.example/in/anna|telegram @anna" {
		t.Errorf("networks %v (%v)", nets, err)
	}
	failing(t, `contact-social set: --network "telegram" is not NAME=ADDRESS`, "contact-social", "set", "--account", account, "--contact", c, "--network", "telegram")
	mustCommand(t, "contact-social", "set", "--account", account, "--contact", c)
	var left int
	if err := pool.Get(&left, `SELECT count(*) FROM contact_socials WHERE contact_id = $1`, contact); err != nil || left != 0 {
		t.Errorf("%d networks left (%v)", left, err)
	}
	failing(t, "account "+account+" has no contact person 999999", "contact-social", "set", "--account", account, "--contact", "999999")
}
