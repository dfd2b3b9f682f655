package db

import (
	"slices"
	"testing"
)

func TestStatements(t *testing.T) {
	got := statements(`-- a comment; not a statement
CREATE TABLE a (x text DEFAULT 'it''s; fine', "we;ird" int); /* block; comment */
CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1; -- inside
END $$;
DO $body$ BEGIN RAISE NOTICE 'x;y'; END $body$;
-- trailing comment only
`)
	want := []string{
		"-- a comment; not a statement\nCREATE TABLE a (x text DEFAULT 'it''s; fine', \"we;ird\" int)",
		"/* block; comment */\nCREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$\nBEGIN\n    PERFORM 1; -- inside\nEND $$",
		"DO $body$ BEGIN RAISE NOTICE 'x;y'; END $body$",
	}
	if !slices.Equal(got, want) {
		t.Errorf("statements:\n%q\nwant\n%q", got, want)
	}
	// Every embedded migration splits into statements that each parse alone.
	ms, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if n := len(statements(m.SQL)); n == 0 {
			t.Errorf("%s: no statements", m.Name)
		}
	}
}
