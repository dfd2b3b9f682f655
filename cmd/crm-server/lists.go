package main

import (
	"database/sql"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/spf13/cobra"

	"github.com/crmservice/crm/impl"
)

// The list commands: account list, department list, user list and token
// list print a table (a header line, columns aligned with spaces) or, with
// -o json, a JSON array. Times are UTC; "-" marks none.

// listTime is a time as the tables show it.
func listTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04Z") }

func listNullTime(t sql.NullTime, none string) string {
	if !t.Valid {
		return none
	}
	return listTime(t.Time)
}

func jsonTime(t sql.NullTime) *time.Time {
	if !t.Valid {
		return nil
	}
	u := t.Time.UTC()
	return &u
}

func (c *cli) accountListCommand() *cobra.Command {
	list := &cobra.Command{
		Use:   "list",
		Short: "List every account with its active users and valid tokens",
		Long: `List every account with its active users and valid tokens, oldest first.

Text: a table of ID, NAME, CURRENCY, TIME ZONE, USERS, TOKENS and CREATED. JSON: an
array of {"id", "name", "base_currency", "time_zone", "users", "tokens", "created_at"}.`,
		Args: noArgs,
	}
	out := outputFlag(list, "a table")
	list.RunE = func(cmd *cobra.Command, _ []string) error {
		return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
			rows, err := impl.ListAccounts(cmd.Context(), pool)
			if err != nil {
				return err
			}
			if *out == outJSON {
				type row struct {
					ID           int64     `json:"id"`
					Name         string    `json:"name"`
					BaseCurrency string    `json:"base_currency"`
					TimeZone     string    `json:"time_zone"`
					Users        int       `json:"users"`
					Tokens       int       `json:"tokens"`
					CreatedAt    time.Time `json:"created_at"`
				}
				js := make([]row, len(rows))
				for i, a := range rows {
					js[i] = row{a.ID, a.Name, a.BaseCurrency, a.TimeZone, a.Users, a.Tokens, a.CreatedAt.UTC()}
				}
				return c.printJSON(js)
			}
			tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tCURRENCY\tTIME ZONE\tUSERS\tTOKENS\tCREATED")
			for _, a := range rows {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%s\n", a.ID, a.Name, a.BaseCurrency, a.TimeZone, a.Users, a.Tokens, listTime(a.CreatedAt))
			}
			return tw.Flush()
		})
	}
	return list
}

func (c *cli) departmentListCommand() *cobra.Command {
	var account int64
	list := &cobra.Command{
		Use:   "list",
		Short: "List the departments of an account with their active users",
		Long: `List the departments of an account with their active users, by name.

Text: a table of ID, NAME, USERS and CREATED. JSON: an array of {"id", "name",
"users", "created_at"}.`,
		Example: `  crm-server department list --account "$ACCOUNT"`,
		Args:    noArgs,
	}
	list.Flags().Int64Var(&account, "account", 0, "`ID` of the account")
	required(list, "account")
	out := outputFlag(list, "a table")
	list.RunE = func(cmd *cobra.Command, _ []string) error {
		return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
			rows, err := impl.ListDepartments(cmd.Context(), pool, account)
			if err != nil {
				return err
			}
			if *out == outJSON {
				type row struct {
					ID        int64     `json:"id"`
					Name      string    `json:"name"`
					Users     int       `json:"users"`
					CreatedAt time.Time `json:"created_at"`
				}
				js := make([]row, len(rows))
				for i, d := range rows {
					js[i] = row{d.ID, d.Name, d.Users, d.CreatedAt.UTC()}
				}
				return c.printJSON(js)
			}
			tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tUSERS\tCREATED")
			for _, d := range rows {
				fmt.Fprintf(tw, "%d\t%s\t%d\t%s\n", d.ID, d.Name, d.Users, listTime(d.CreatedAt))
			}
			return tw.Flush()
		})
	}
	return list
}

func (c *cli) userListCommand() *cobra.Command {
	var account int64
	list := &cobra.Command{
		Use:   "list",
		Short: "List the users of an account, deactivated ones included",
		Long: `List the users of an account by id, deactivated ones included.

Text: a table of ID, NAME, LOGIN, ROLE, DEPARTMENT, ACTIVE and CREATED. JSON: an array
of {"id", "name", "login", "role", "department_id", "department_name",
"kpi_users_report", "kpi_departments_report", "time_zone", "active", "created_at"}
(department_id, department_name and time_zone null when unset).`,
		Example: `  crm-server user list --account "$ACCOUNT" -o json`,
		Args:    noArgs,
	}
	list.Flags().Int64Var(&account, "account", 0, "`ID` of the account")
	required(list, "account")
	out := outputFlag(list, "a table")
	list.RunE = func(cmd *cobra.Command, _ []string) error {
		return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
			rows, err := impl.ListUsers(cmd.Context(), pool, account)
			if err != nil {
				return err
			}
			if *out == outJSON {
				type row struct {
					ID                   int64     `json:"id"`
					Name                 string    `json:"name"`
					Login                string    `json:"login"`
					Role                 string    `json:"role"`
					DepartmentID         *int64    `json:"department_id"`
					DepartmentName       *string   `json:"department_name"`
					KPIUsersReport       bool      `json:"kpi_users_report"`
					KPIDepartmentsReport bool      `json:"kpi_departments_report"`
					TimeZone             *string   `json:"time_zone"`
					Active               bool      `json:"active"`
					CreatedAt            time.Time `json:"created_at"`
				}
				js := make([]row, len(rows))
				for i, u := range rows {
					r := row{ID: u.ID, Name: u.Name, Login: u.Login, Role: u.Role, KPIUsersReport: u.KPIUsersReport,
						KPIDepartmentsReport: u.KPIDepartmentsReport, Active: u.Active, CreatedAt: u.CreatedAt.UTC()}
					if u.DepartmentID.Valid {
						r.DepartmentID, r.DepartmentName = &u.DepartmentID.Int64, &u.DepartmentName.String
					}
					if u.TimeZone.Valid {
						r.TimeZone = &u.TimeZone.String
					}
					js[i] = r
				}
				return c.printJSON(js)
			}
			tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tLOGIN\tROLE\tDEPARTMENT\tACTIVE\tCREATED")
			for _, u := range rows {
				dept := "-"
				if u.DepartmentID.Valid {
					dept = fmt.Sprintf("%d %s", u.DepartmentID.Int64, u.DepartmentName.String)
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%t\t%s\n", u.ID, u.Name, u.Login, u.Role, dept, u.Active, listTime(u.CreatedAt))
			}
			return tw.Flush()
		})
	}
	return list
}

func (c *cli) tokenListCommand() *cobra.Command {
	var f impl.TokenFilter
	list := &cobra.Command{
		Use:   "list",
		Short: "List tokens (never their secrets): who holds them, when they expire and were last used",
		Long: `List tokens by id: the valid ones of every account, or of one account (--account)
or user (--user); --all adds the expired and revoked ones. The secret of a token is
never shown: only its SHA-256 is stored. LAST USED is when it last authenticated a
request (written at most once a minute; "never" since it was issued).

Text: a table of ID, ACCOUNT, USER, LABEL, CREATED, EXPIRES, LAST USED and STATE.
JSON: an array of {"id", "account_id", "user_id", "user_name", "label", "created_at",
"expires_at", "last_used_at", "revoked_at", "state"} (times null when unset; state
valid, expired or revoked).`,
		Example: `  crm-server token list --account "$ACCOUNT"
  crm-server token list --user "$ANNA" --all -o json`,
		Args: noArgs,
	}
	fl := list.Flags()
	fl.Int64Var(&f.AccountID, "account", 0, "`ID` of the account (default: every account)")
	fl.Int64Var(&f.UserID, "user", 0, "`ID` of the user (default: every user)")
	fl.BoolVar(&f.All, "all", false, "expired and revoked tokens as well")
	out := outputFlag(list, "a table")
	list.RunE = func(cmd *cobra.Command, _ []string) error {
		return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
			rows, err := impl.ListTokens(cmd.Context(), pool, f)
			if err != nil {
				return err
			}
			if *out == outJSON {
				type row struct {
					ID         int64      `json:"id"`
					AccountID  int64      `json:"account_id"`
					UserID     int64      `json:"user_id"`
					UserName   string     `json:"user_name"`
					Label      string     `json:"label"`
					CreatedAt  time.Time  `json:"created_at"`
					ExpiresAt  *time.Time `json:"expires_at"`
					LastUsedAt *time.Time `json:"last_used_at"`
					RevokedAt  *time.Time `json:"revoked_at"`
					State      string     `json:"state"`
				}
				js := make([]row, len(rows))
				for i, t := range rows {
					js[i] = row{t.ID, t.AccountID, t.UserID, t.UserName, t.Label, t.CreatedAt.UTC(),
						jsonTime(t.ExpiresAt), jsonTime(t.LastUsedAt), jsonTime(t.RevokedAt), t.State}
				}
				return c.printJSON(js)
			}
			tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tACCOUNT\tUSER\tLABEL\tCREATED\tEXPIRES\tLAST USED\tSTATE")
			for _, t := range rows {
				label := t.Label
				if label == "" {
					label = "-"
				}
				fmt.Fprintf(tw, "%d\t%d\t%d %s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.AccountID, t.UserID, t.UserName, label,
					listTime(t.CreatedAt), listNullTime(t.ExpiresAt, "never"), listNullTime(t.LastUsedAt, "never"), t.State)
			}
			return tw.Flush()
		})
	}
	return list
}
