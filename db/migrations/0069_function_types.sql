-- Row types of the objects the functions of db/functions build: json_agg and
-- row_to_json of a value of one of these write its members under these names,
-- without the blanks json_build_object puts around every colon, and without a
-- subquery, which would keep Citus from caching the statement's plan
-- (docs/scale-out.md, "Functions of fast-path statements").

CREATE TYPE crm_email_item AS (id bigint, company_id bigint, id_contact_man bigint, email text);

CREATE TYPE crm_phone_item AS (id bigint, company_id bigint, id_contact_man bigint, phone text, descr text);

CREATE TYPE crm_social_item AS (id bigint, network text, address text);

-- A contact person as the card and the contact lists show them; the three
-- lists are JSON arrays built beforehand.
CREATE TYPE crm_contact_item AS (
	id bigint, company_id bigint, company_name text, name text,
	first_name text, middle_name text, last_name text,
	position_id bigint, "position" text, status_id bigint, status text,
	note text, created text,
	"Phones" json, "Emails" json, "SocialNetworks" json);
