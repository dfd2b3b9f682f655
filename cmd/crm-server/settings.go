package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/jmoiron/sqlx"
	"github.com/spf13/cobra"

	"github.com/crmservice/crm/impl"
)

// The account's settings the lists read (additional fields, ready filters),
// social networks of contact persons, and money accounts: the same functions
// as the API's admin operations, without a journal row (an operator's action).

func (c *cli) fieldCommand() *cobra.Command {
	var in impl.FieldInput
	add := &cobra.Command{
		Use:   "add",
		Short: "Define an additional field of counterparties or deals and print its id",
		Long: `Define an additional field of counterparties (--module 1) or deals (--module 20) and
print its id. The lists read it as the column ADD_{name}; its values are set through
the API (POST /field/values/update).`,
		Example: `  crm-server field add --account "$ACCOUNT" --module 1 --name segment --title Segment`,
		Args:    noArgs,
	}
	f := add.Flags()
	f.Int64Var(&in.AccountID, "account", 0, "`ID` of the account")
	f.IntVar(&in.Module, "module", 0, "1 (counterparties) or 20 (deals)")
	f.StringVar(&in.Name, "name", "", "name: letters, digits and _, at most 63")
	f.StringVar(&in.Title, "title", "", "title shown to users")
	f.StringVar(&in.Type, "type", "text", "type of the values: text, number, date or boolean")
	required(add, "account", "module", "name")
	completeWords(add, "module", "1", "20")
	completeWords(add, "type", "text", "number", "date", "boolean")
	addOut := outputFlag(add, "the id")
	add.RunE = func(cmd *cobra.Command, _ []string) error {
		return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
			id, err := impl.AddField(cmd.Context(), pool, in)
			if err != nil {
				return err
			}
			return c.printID(addOut, id)
		})
	}

	var listAccount int64
	list := &cobra.Command{Use: "list", Short: "List the additional fields of an account", Args: noArgs}
	list.Flags().Int64Var(&listAccount, "account", 0, "`ID` of the account")
	required(list, "account")
	listOut := outputFlag(list, "a table")
	list.RunE = func(cmd *cobra.Command, _ []string) error {
		return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
			fields, err := impl.ListFields(cmd.Context(), pool, listAccount, 0)
			if err != nil {
				return err
			}
			if *listOut == outJSON {
				return c.printJSON(fields)
			}
			tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tMODULE\tNAME\tTYPE\tTITLE")
			for _, f := range fields {
				fmt.Fprintf(tw, "%d\t%d\tADD_%s\t%s\t%s\n", f.ID, f.Module, f.Name, f.Type, f.Title)
			}
			return tw.Flush()
		})
	}

	var removeAccount, removeID int64
	remove := &cobra.Command{
		Use:   "remove",
		Short: "Remove an additional field (records keep their values, hidden)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
				_, err := impl.RemoveField(cmd.Context(), pool, removeAccount, removeID)
				return err
			})
		},
	}
	remove.Flags().Int64Var(&removeAccount, "account", 0, "`ID` of the account")
	remove.Flags().Int64Var(&removeID, "id", 0, "`ID` of the field")
	required(remove, "account", "id")
	return group("field", "Define the additional fields (ADD_ columns) of counterparties and deals", add, list, remove)
}

func (c *cli) filterCommand() *cobra.Command {
	var in impl.FilterInput
	var definition string
	add := &cobra.Command{
		Use:   "add",
		Short: "Define a ready filter of the universal list and print its id",
		Long: `Define a ready filter (user_filter_ids) of counterparties (--module 1), deals (20)
or mail (24) and print its id. The definition is a JSON object of the module's filter
parameters of the universal list, checked as the list checks them.`,
		Example: `  crm-server filter add --account "$ACCOUNT" --module 20 --name "Upsell deals" --definition '{"type_id": 82}'`,
		Args:    noArgs,
	}
	f := add.Flags()
	f.Int64Var(&in.AccountID, "account", 0, "`ID` of the account")
	f.IntVar(&in.Module, "module", 0, "1 (counterparties), 20 (deals) or 24 (mail)")
	f.StringVar(&in.Name, "name", "", "name of the filter")
	f.StringVar(&definition, "definition", "", "`JSON` object of filter parameters")
	required(add, "account", "module", "name", "definition")
	completeWords(add, "module", "1", "20", "24")
	addOut := outputFlag(add, "the id")
	add.RunE = func(cmd *cobra.Command, _ []string) error {
		in.Definition = json.RawMessage(definition)
		return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
			id, err := impl.AddFilter(cmd.Context(), pool, in)
			if err != nil {
				return err
			}
			return c.printID(addOut, id)
		})
	}

	var listAccount int64
	list := &cobra.Command{Use: "list", Short: "List the ready filters of an account", Args: noArgs}
	list.Flags().Int64Var(&listAccount, "account", 0, "`ID` of the account")
	required(list, "account")
	listOut := outputFlag(list, "a table")
	list.RunE = func(cmd *cobra.Command, _ []string) error {
		return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
			filters, err := impl.ListFilters(cmd.Context(), pool, listAccount, 0)
			if err != nil {
				return err
			}
			if *listOut == outJSON {
				return c.printJSON(filters)
			}
			tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tMODULE\tNAME\tDEFINITION")
			for _, f := range filters {
				fmt.Fprintf(tw, "%d\t%d\t%s\t%s\n", f.ID, f.Module, f.Name, f.Definition)
			}
			return tw.Flush()
		})
	}

	var removeAccount, removeID int64
	remove := &cobra.Command{
		Use:   "remove",
		Short: "Remove a ready filter",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
				_, err := impl.RemoveFilter(cmd.Context(), pool, removeAccount, removeID)
				return err
			})
		},
	}
	remove.Flags().Int64Var(&removeAccount, "account", 0, "`ID` of the account")
	remove.Flags().Int64Var(&removeID, "id", 0, "`ID` of the filter")
	required(remove, "account", "id")
	return group("filter", "Define the ready filters (user_filter_ids) of the universal list", add, list, remove)
}

func (c *cli) contactSocialCommand() *cobra.Command {
	var account, contact int64
	var networks []string
	set := &cobra.Command{
		Use:   "set",
		Short: "Replace the social networks of a contact person",
		Long: `Replace the social networks of a contact person with those given as
--network NAME=ADDRESS (repeated); without --network it removes them all.`,
		Example: `  crm-server contact-social set --account "$ACCOUNT" --contact 2001 --network linkedin=https://www.linkedin.com/in/anna --network telegram=@anna`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var list []impl.SocialNetwork
			for _, n := range networks {
				name, address, ok := strings.Cut(n, "=")
				if !ok || name == "" || address == "" {
					return fmt.Errorf("contact-social set: --network %q is not NAME=ADDRESS", n)
				}
				list = append(list, impl.SocialNetwork{Network: name, Address: address})
			}
			return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
				return impl.SetContactSocialsAdmin(cmd.Context(), pool, account, contact, list)
			})
		},
	}
	set.Flags().Int64Var(&account, "account", 0, "`ID` of the account")
	set.Flags().Int64Var(&contact, "contact", 0, "`ID` of the contact person")
	set.Flags().StringArrayVar(&networks, "network", nil, "a network as `NAME=ADDRESS` (repeat for several)")
	required(set, "account", "contact")
	return group("contact-social", "Set the social networks of contact persons", set)
}

func (c *cli) moneyAccountCommand() *cobra.Command {
	var account int64
	var name, currency string
	create := &cobra.Command{
		Use:     "create",
		Short:   "Create a money account (a bank account or cash desk) and print its id",
		Example: `  crm-server money-account create --account "$ACCOUNT" --name "Bank EUR" --currency EUR`,
		Args:    noArgs,
	}
	create.Flags().Int64Var(&account, "account", 0, "`ID` of the account")
	create.Flags().StringVar(&name, "name", "", "name of the money account")
	create.Flags().StringVar(&currency, "currency", "", "currency, three capital letters (ISO 4217)")
	required(create, "account", "name", "currency")
	createOut := outputFlag(create, "the id")
	create.RunE = func(cmd *cobra.Command, _ []string) error {
		return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
			id, err := impl.CreateMoneyAccount(cmd.Context(), pool, account, name, currency)
			if err != nil {
				return err
			}
			return c.printID(createOut, id)
		})
	}
	var listAccount int64
	list := &cobra.Command{Use: "list", Short: "List the money accounts of an account", Args: noArgs}
	list.Flags().Int64Var(&listAccount, "account", 0, "`ID` of the account")
	required(list, "account")
	listOut := outputFlag(list, "a table")
	list.RunE = func(cmd *cobra.Command, _ []string) error {
		return c.withDB(cmd.Context(), func(pool *sqlx.DB) error {
			accounts, err := impl.ListMoneyAccounts(cmd.Context(), pool, listAccount)
			if err != nil {
				return err
			}
			if *listOut == outJSON {
				return c.printJSON(accounts)
			}
			tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tCURRENCY\tACTIVE")
			for _, a := range accounts {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%t\n", a.ID, a.Name, a.Currency, a.Active)
			}
			return tw.Flush()
		})
	}
	return group("money-account", "Create and list money accounts (bank accounts, cash desks)", create, list)
}
