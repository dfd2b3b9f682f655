-- The initial schema of the Customer Relationship Service.
--
-- Every business table carries account_id; primary keys are (account_id, id) and
-- foreign keys include account_id, so a row of one account can never point at a row
-- of another. Each table has its own identity sequence, so an id alone also names a
-- record across the whole database. Text columns are NOT NULL DEFAULT '' (the API
-- answers "" for an unset text); optional references are NULL.

CREATE TABLE accounts (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name          text NOT NULL CHECK (name <> ''),
    base_currency char(3) NOT NULL CHECK (base_currency ~ '^[A-Z]{3}$'),
    time_zone     text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE departments (
    account_id bigint NOT NULL REFERENCES accounts (id),
    id         bigint GENERATED ALWAYS AS IDENTITY,
    name       text NOT NULL CHECK (name <> ''),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id)
);
CREATE UNIQUE INDEX departments_name ON departments (account_id, lower(name));

CREATE TABLE users (
    account_id             bigint NOT NULL REFERENCES accounts (id),
    id                     bigint GENERATED ALWAYS AS IDENTITY,
    name                   text NOT NULL CHECK (name <> ''),
    login                  text NOT NULL CHECK (login <> ''),
    role                   text NOT NULL CHECK (role IN ('admin', 'head', 'member')),
    department_id          bigint,
    kpi_users_report       boolean NOT NULL DEFAULT false,
    kpi_departments_report boolean NOT NULL DEFAULT false,
    time_zone              text, -- NULL: the account's time zone
    active                 boolean NOT NULL DEFAULT true,
    created_at             timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id),
    FOREIGN KEY (account_id, department_id) REFERENCES departments (account_id, id)
);
CREATE UNIQUE INDEX users_login ON users (account_id, lower(login));
CREATE INDEX users_department ON users (account_id, department_id);

-- Only the SHA-256 of a token is kept; the token itself is shown once, when issued.
CREATE TABLE tokens (
    account_id   bigint NOT NULL,
    id           bigint GENERATED ALWAYS AS IDENTITY,
    user_id      bigint NOT NULL,
    hash         bytea NOT NULL CHECK (length(hash) = 32),
    label        text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz,
    revoked_at   timestamptz,
    PRIMARY KEY (account_id, id),
    -- Unique per account: on Citus every unique key holds the distribution column.
    -- (Databases migrated before 0008 had UNIQUE (hash); 0008 makes them equal.)
    CONSTRAINT tokens_hash UNIQUE (account_id, hash),
    FOREIGN KEY (account_id, user_id) REFERENCES users (account_id, id)
);

-- Directory values of every directory of an account. directory_code names the
-- directory (9 counterparty types, 10 statuses, 29 categories, 35 kinds of tasks, and
-- the codes of docs/decisions.md). Tables that reference a directory carry a generated
-- constant column with its code, so the foreign key also checks the directory.
CREATE TABLE directory_values (
    account_id     bigint NOT NULL REFERENCES accounts (id),
    id             bigint GENERATED ALWAYS AS IDENTITY,
    directory_code smallint NOT NULL CHECK (directory_code IN (9, 10, 29, 35, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49)),
    name           text NOT NULL CHECK (name <> ''),
    sort           integer NOT NULL DEFAULT 0,
    is_controlled  boolean NOT NULL DEFAULT false, -- counterparty types watched by "forgotten companies"
    is_invoice     boolean NOT NULL DEFAULT false, -- document types counted as issued invoices
    active         boolean NOT NULL DEFAULT true,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id),
    UNIQUE (account_id, directory_code, id)
);
CREATE UNIQUE INDEX directory_values_name ON directory_values (account_id, directory_code, lower(name));

CREATE TABLE companies (
    account_id        bigint NOT NULL REFERENCES accounts (id),
    id                bigint GENERATED ALWAYS AS IDENTITY,
    name              text NOT NULL CHECK (name <> ''),
    person            smallint NOT NULL DEFAULT 1 CHECK (person IN (1, 2)),
    first_name        text NOT NULL DEFAULT '',
    middle_name       text NOT NULL DEFAULT '',
    last_name         text NOT NULL DEFAULT '',
    address           text NOT NULL DEFAULT '',
    city              text NOT NULL DEFAULT '',
    region            text NOT NULL DEFAULT '',
    country           text NOT NULL DEFAULT '',
    url               text NOT NULL DEFAULT '',
    activity_type     text NOT NULL DEFAULT '',
    property_form     text NOT NULL DEFAULT '',
    info_source       text NOT NULL DEFAULT '',
    note              text NOT NULL DEFAULT '',
    tags              text[] NOT NULL DEFAULT '{}',
    external_code     text NOT NULL DEFAULT '',
    type_id           bigint NOT NULL,
    type_dir          smallint GENERATED ALWAYS AS (9) STORED,
    status_id         bigint,
    status_dir        smallint GENERATED ALWAYS AS (10) STORED,
    category_id       bigint,
    category_dir      smallint GENERATED ALWAYS AS (29) STORED,
    group_id          bigint,
    group_dir         smallint GENERATED ALWAYS AS (49) STORED,
    agent_id          bigint,
    agent_dir         smallint GENERATED ALWAYS AS (48) STORED,
    user_id           bigint NOT NULL,
    tax_id            text NOT NULL DEFAULT '', -- inn of the default requisites (trigger below)
    which_site_source text NOT NULL DEFAULT '',
    which_host_source text NOT NULL DEFAULT '',
    which_link_source text NOT NULL DEFAULT '',
    utm_campaign      text NOT NULL DEFAULT '',
    utm_source        text NOT NULL DEFAULT '',
    utm_medium        text NOT NULL DEFAULT '',
    utm_content       text NOT NULL DEFAULT '',
    utm_term          text NOT NULL DEFAULT '',
    extra             jsonb NOT NULL DEFAULT '{}', -- values of additional (ADD_) fields
    created_via       text NOT NULL DEFAULT 'api' CHECK (created_via IN ('api', 'admin', 'demo', 'import', 'mail')),
    created_by        bigint,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    deleted_at        timestamptz,
    PRIMARY KEY (account_id, id),
    CONSTRAINT companies_type_fk FOREIGN KEY (account_id, type_dir, type_id) REFERENCES directory_values (account_id, directory_code, id),
    CONSTRAINT companies_status_fk FOREIGN KEY (account_id, status_dir, status_id) REFERENCES directory_values (account_id, directory_code, id),
    CONSTRAINT companies_category_fk FOREIGN KEY (account_id, category_dir, category_id) REFERENCES directory_values (account_id, directory_code, id),
    CONSTRAINT companies_group_fk FOREIGN KEY (account_id, group_dir, group_id) REFERENCES directory_values (account_id, directory_code, id),
    CONSTRAINT companies_agent_fk FOREIGN KEY (account_id, agent_dir, agent_id) REFERENCES directory_values (account_id, directory_code, id),
    CONSTRAINT companies_user_fk FOREIGN KEY (account_id, user_id) REFERENCES users (account_id, id),
    CONSTRAINT companies_created_by_fk FOREIGN KEY (account_id, created_by) REFERENCES users (account_id, id)
);
CREATE INDEX companies_user ON companies (account_id, user_id, id);

CREATE TABLE contacts (
    account_id  bigint NOT NULL,
    id          bigint GENERATED ALWAYS AS IDENTITY,
    company_id  bigint NOT NULL,
    first_name  text NOT NULL DEFAULT '',
    middle_name text NOT NULL DEFAULT '',
    last_name   text NOT NULL DEFAULT '',
    -- "The full name is assembled from last name, first name and middle name automatically."
    name        text GENERATED ALWAYS AS (btrim(regexp_replace(last_name || ' ' || first_name || ' ' || middle_name, '\s+', ' ', 'g'))) STORED,
    position_id  bigint,
    position_dir smallint GENERATED ALWAYS AS (42) STORED,
    status_id   bigint,
    status_dir  smallint GENERATED ALWAYS AS (43) STORED,
    note        text NOT NULL DEFAULT '',
    created_by  bigint,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id),
    UNIQUE (account_id, company_id, id),
    CONSTRAINT contacts_company_fk FOREIGN KEY (account_id, company_id) REFERENCES companies (account_id, id),
    CONSTRAINT contacts_position_fk FOREIGN KEY (account_id, position_dir, position_id) REFERENCES directory_values (account_id, directory_code, id),
    CONSTRAINT contacts_status_fk FOREIGN KEY (account_id, status_dir, status_id) REFERENCES directory_values (account_id, directory_code, id),
    CONSTRAINT contacts_created_by_fk FOREIGN KEY (account_id, created_by) REFERENCES users (account_id, id)
);

CREATE TABLE contact_socials (
    account_id bigint NOT NULL,
    id         bigint GENERATED ALWAYS AS IDENTITY,
    contact_id bigint NOT NULL,
    network    text NOT NULL CHECK (network <> ''),
    address    text NOT NULL CHECK (address <> ''),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id),
    CONSTRAINT contact_socials_contact_fk FOREIGN KEY (account_id, contact_id) REFERENCES contacts (account_id, id)
);
CREATE INDEX contact_socials_contact ON contact_socials (account_id, contact_id);

-- A phone or e-mail belongs to a counterparty, and to one of its contact persons when
-- contact_id is set; the three-column key makes the database check that the contact
-- person belongs to the same counterparty.
CREATE TABLE phones (
    account_id   bigint NOT NULL,
    id           bigint GENERATED ALWAYS AS IDENTITY,
    company_id   bigint NOT NULL,
    contact_id   bigint,
    phone        text NOT NULL CHECK (phone <> ''),
    phone_digits text GENERATED ALWAYS AS (regexp_replace(phone, '[^0-9]', '', 'g')) STORED,
    descr        text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id),
    CONSTRAINT phones_company_fk FOREIGN KEY (account_id, company_id) REFERENCES companies (account_id, id),
    CONSTRAINT phones_contact_fk FOREIGN KEY (account_id, company_id, contact_id) REFERENCES contacts (account_id, company_id, id)
);
CREATE INDEX phones_company ON phones (account_id, company_id);
CREATE INDEX phones_digits ON phones (account_id, phone_digits);

CREATE TABLE emails (
    account_id bigint NOT NULL,
    id         bigint GENERATED ALWAYS AS IDENTITY,
    company_id bigint NOT NULL,
    contact_id bigint,
    email      text NOT NULL CHECK (email <> ''),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id),
    CONSTRAINT emails_company_fk FOREIGN KEY (account_id, company_id) REFERENCES companies (account_id, id),
    CONSTRAINT emails_contact_fk FOREIGN KEY (account_id, company_id, contact_id) REFERENCES contacts (account_id, company_id, id)
);
CREATE INDEX emails_company ON emails (account_id, company_id);
CREATE INDEX emails_email ON emails (account_id, lower(email));

CREATE TABLE requisites (
    account_id  bigint NOT NULL,
    id          bigint GENERATED ALWAYS AS IDENTITY,
    company_id  bigint NOT NULL,
    is_default  boolean NOT NULL DEFAULT false,
    inn         text NOT NULL DEFAULT '',
    kpp         text NOT NULL DEFAULT '',
    ogrn_client text NOT NULL DEFAULT '',
    okpo        text NOT NULL DEFAULT '',
    okved       text NOT NULL DEFAULT '',
    oktmo       text NOT NULL DEFAULT '',
    okato       text NOT NULL DEFAULT '',
    kr_name     text NOT NULL DEFAULT '',
    full_name   text NOT NULL DEFAULT '',
    adres_yur   text NOT NULL DEFAULT '',
    adres_fact  text NOT NULL DEFAULT '',
    pocht_adr   text NOT NULL DEFAULT '',
    dir_name    text NOT NULL DEFAULT '',
    dir_status  text NOT NULL DEFAULT '',
    gl_buh      text NOT NULL DEFAULT '',
    bank_name   text NOT NULL DEFAULT '',
    bik         text NOT NULL DEFAULT '',
    ks          text NOT NULL DEFAULT '',
    rs          text NOT NULL DEFAULT '',
    requis_prim text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id),
    CONSTRAINT requisites_company_fk FOREIGN KEY (account_id, company_id) REFERENCES companies (account_id, id)
);
CREATE INDEX requisites_company ON requisites (account_id, company_id);
CREATE UNIQUE INDEX requisites_one_default ON requisites (account_id, company_id) WHERE is_default;

-- companies.tax_id follows the inn of the counterparty's default requisites.
CREATE FUNCTION requisites_sync_tax_id() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE companies c
       SET tax_id = coalesce((SELECT r.inn FROM requisites r
                               WHERE r.account_id = NEW.account_id AND r.company_id = NEW.company_id AND r.is_default), '')
     WHERE c.account_id = NEW.account_id AND c.id = NEW.company_id;
    RETURN NULL;
END $$;
CREATE TRIGGER requisites_sync_tax_id AFTER INSERT OR UPDATE OF inn, is_default ON requisites
    FOR EACH ROW EXECUTE FUNCTION requisites_sync_tax_id();

CREATE TABLE goods (
    account_id bigint NOT NULL REFERENCES accounts (id),
    id         bigint GENERATED ALWAYS AS IDENTITY,
    name       text NOT NULL CHECK (name <> ''),
    code       text NOT NULL DEFAULT '',
    unit       text NOT NULL DEFAULT '',
    price      numeric(18, 2) NOT NULL DEFAULT 0 CHECK (price >= 0),
    qnt        numeric(18, 3) NOT NULL DEFAULT 1 CHECK (qnt >= 0), -- default quantity of a new position
    vat        numeric(5, 2) NOT NULL DEFAULT 0 CHECK (vat BETWEEN 0 AND 100),
    note       text NOT NULL DEFAULT '',
    active     boolean NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id)
);

CREATE TABLE deals (
    account_id  bigint NOT NULL,
    id          bigint GENERATED ALWAYS AS IDENTITY,
    name        text NOT NULL CHECK (name <> ''),
    company_id  bigint NOT NULL,
    contact_id  bigint,
    type_id     bigint NOT NULL,
    type_dir    smallint GENERATED ALWAYS AS (40) STORED,
    status_id   bigint NOT NULL,
    status_dir  smallint GENERATED ALWAYS AS (41) STORED,
    user_id     bigint NOT NULL,
    date_start  date NOT NULL,
    date_finish date NOT NULL,
    sum         numeric(18, 2) NOT NULL DEFAULT 0 CHECK (sum >= 0),
    note        text NOT NULL DEFAULT '',
    tags        text[] NOT NULL DEFAULT '{}',
    extra       jsonb NOT NULL DEFAULT '{}',
    created_by  bigint,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id),
    UNIQUE (account_id, company_id, id),
    CONSTRAINT deals_dates CHECK (date_finish >= date_start),
    CONSTRAINT deals_company_fk FOREIGN KEY (account_id, company_id) REFERENCES companies (account_id, id),
    CONSTRAINT deals_contact_fk FOREIGN KEY (account_id, company_id, contact_id) REFERENCES contacts (account_id, company_id, id),
    CONSTRAINT deals_type_fk FOREIGN KEY (account_id, type_dir, type_id) REFERENCES directory_values (account_id, directory_code, id),
    CONSTRAINT deals_status_fk FOREIGN KEY (account_id, status_dir, status_id) REFERENCES directory_values (account_id, directory_code, id),
    CONSTRAINT deals_user_fk FOREIGN KEY (account_id, user_id) REFERENCES users (account_id, id),
    CONSTRAINT deals_created_by_fk FOREIGN KEY (account_id, created_by) REFERENCES users (account_id, id)
);
CREATE INDEX deals_company ON deals (account_id, company_id);
CREATE INDEX deals_user ON deals (account_id, user_id, id);

-- A goods position's sum is quantity × price less the discount percent, rounded to
-- cents; VAT is a rate carried for documents and is included in the price.
CREATE TABLE deal_goods (
    account_id  bigint NOT NULL,
    id          bigint GENERATED ALWAYS AS IDENTITY,
    deal_id     bigint NOT NULL,
    goods_id    bigint,
    description text NOT NULL DEFAULT '', -- "discription" in the interface
    code        text NOT NULL DEFAULT '',
    qnt         numeric(18, 3) NOT NULL DEFAULT 1 CHECK (qnt >= 0),
    price       numeric(18, 2) NOT NULL DEFAULT 0 CHECK (price >= 0),
    discount    numeric(5, 2) NOT NULL DEFAULT 0 CHECK (discount BETWEEN 0 AND 100),
    vat         numeric(5, 2) NOT NULL DEFAULT 0 CHECK (vat BETWEEN 0 AND 100),
    sum         numeric(18, 2) GENERATED ALWAYS AS (round(qnt * price * (100 - discount) / 100, 2)) STORED,
    note        text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id),
    CONSTRAINT deal_goods_deal_fk FOREIGN KEY (account_id, deal_id) REFERENCES deals (account_id, id),
    CONSTRAINT deal_goods_goods_fk FOREIGN KEY (account_id, goods_id) REFERENCES goods (account_id, id)
);
CREATE INDEX deal_goods_deal ON deal_goods (account_id, deal_id);

CREATE TABLE tasks (
    account_id       bigint NOT NULL,
    id               bigint GENERATED ALWAYS AS IDENTITY,
    company_id       bigint NOT NULL,
    deal_id          bigint,
    contact_id       bigint,
    note             text NOT NULL CHECK (note <> ''),
    type_id          bigint NOT NULL,
    type_dir         smallint GENERATED ALWAYS AS (35) STORED,
    status_id        smallint NOT NULL DEFAULT 1 CHECK (status_id IN (1, 2)), -- 1 in work, 2 done
    user_id          bigint NOT NULL, -- assignee
    assigner_id      bigint NOT NULL, -- the token owner at insert time
    date_start       timestamptz NOT NULL,
    date_finish      timestamptz,
    done_at          timestamptz, -- completion time: set exactly when status_id = 2
    result           text NOT NULL DEFAULT '',
    is_hot           boolean NOT NULL DEFAULT false,
    reminder_minutes integer CHECK (reminder_minutes >= 0),
    tags             text[] NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id),
    CONSTRAINT tasks_done CHECK ((status_id = 2) = (done_at IS NOT NULL)),
    CONSTRAINT tasks_dates CHECK (date_finish IS NULL OR date_finish >= date_start),
    CONSTRAINT tasks_company_fk FOREIGN KEY (account_id, company_id) REFERENCES companies (account_id, id),
    CONSTRAINT tasks_deal_fk FOREIGN KEY (account_id, company_id, deal_id) REFERENCES deals (account_id, company_id, id),
    CONSTRAINT tasks_contact_fk FOREIGN KEY (account_id, company_id, contact_id) REFERENCES contacts (account_id, company_id, id),
    CONSTRAINT tasks_type_fk FOREIGN KEY (account_id, type_dir, type_id) REFERENCES directory_values (account_id, directory_code, id),
    CONSTRAINT tasks_user_fk FOREIGN KEY (account_id, user_id) REFERENCES users (account_id, id),
    CONSTRAINT tasks_assigner_fk FOREIGN KEY (account_id, assigner_id) REFERENCES users (account_id, id)
);
CREATE INDEX tasks_company ON tasks (account_id, company_id, id);
CREATE INDEX tasks_user ON tasks (account_id, user_id, id);
CREATE INDEX tasks_assigner ON tasks (account_id, assigner_id, id);

CREATE TABLE documents (
    account_id    bigint NOT NULL,
    id            bigint GENERATED ALWAYS AS IDENTITY,
    number        text NOT NULL DEFAULT '',
    date          date NOT NULL,
    sum           numeric(18, 2) NOT NULL DEFAULT 0 CHECK (sum >= 0),
    type_id       bigint NOT NULL,
    type_dir      smallint GENERATED ALWAYS AS (44) STORED,
    status_id     bigint,
    status_dir    smallint GENERATED ALWAYS AS (45) STORED,
    note          text NOT NULL DEFAULT '',
    user_id       bigint NOT NULL,
    company_id    bigint NOT NULL,
    deal_id       bigint,
    contact_id    bigint,
    date_expire   date,
    external_code text NOT NULL DEFAULT '',
    tags          text[] NOT NULL DEFAULT '{}',
    created_by    bigint,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id),
    CONSTRAINT documents_company_fk FOREIGN KEY (account_id, company_id) REFERENCES companies (account_id, id),
    CONSTRAINT documents_deal_fk FOREIGN KEY (account_id, company_id, deal_id) REFERENCES deals (account_id, company_id, id),
    CONSTRAINT documents_contact_fk FOREIGN KEY (account_id, company_id, contact_id) REFERENCES contacts (account_id, company_id, id),
    CONSTRAINT documents_type_fk FOREIGN KEY (account_id, type_dir, type_id) REFERENCES directory_values (account_id, directory_code, id),
    CONSTRAINT documents_status_fk FOREIGN KEY (account_id, status_dir, status_id) REFERENCES directory_values (account_id, directory_code, id),
    CONSTRAINT documents_user_fk FOREIGN KEY (account_id, user_id) REFERENCES users (account_id, id),
    CONSTRAINT documents_created_by_fk FOREIGN KEY (account_id, created_by) REFERENCES users (account_id, id)
);
CREATE INDEX documents_company ON documents (account_id, company_id, id);
CREATE INDEX documents_deal ON documents (account_id, deal_id, id);
CREATE INDEX documents_user ON documents (account_id, user_id, id);

CREATE TABLE document_goods (
    account_id  bigint NOT NULL,
    id          bigint GENERATED ALWAYS AS IDENTITY,
    document_id bigint NOT NULL,
    goods_id    bigint,
    description text NOT NULL DEFAULT '', -- "discription" in the interface
    code        text NOT NULL DEFAULT '',
    qnt         numeric(18, 3) NOT NULL DEFAULT 1 CHECK (qnt >= 0),
    price       numeric(18, 2) NOT NULL DEFAULT 0 CHECK (price >= 0),
    discount    numeric(5, 2) NOT NULL DEFAULT 0 CHECK (discount BETWEEN 0 AND 100),
    vat         numeric(5, 2) NOT NULL DEFAULT 0 CHECK (vat BETWEEN 0 AND 100),
    sum         numeric(18, 2) GENERATED ALWAYS AS (round(qnt * price * (100 - discount) / 100, 2)) STORED,
    note        text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id),
    CONSTRAINT document_goods_document_fk FOREIGN KEY (account_id, document_id) REFERENCES documents (account_id, id),
    CONSTRAINT document_goods_goods_fk FOREIGN KEY (account_id, goods_id) REFERENCES goods (account_id, id)
);
CREATE INDEX document_goods_document ON document_goods (account_id, document_id);

CREATE TABLE money_accounts (
    account_id bigint NOT NULL REFERENCES accounts (id),
    id         bigint GENERATED ALWAYS AS IDENTITY,
    name       text NOT NULL CHECK (name <> ''),
    currency   char(3) NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    active     boolean NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id)
);

-- sum is in the account's base currency, sum_currency in the money account's own
-- currency. A transfer between the account's own money accounts is two movements
-- marked is_transfer; dashboards do not count them.
CREATE TABLE money_movements (
    account_id       bigint NOT NULL,
    id               bigint GENERATED ALWAYS AS IDENTITY,
    date             date NOT NULL,
    sum              numeric(18, 2) NOT NULL CHECK (sum >= 0),
    sum_currency     numeric(18, 2) NOT NULL CHECK (sum_currency >= 0),
    direction        smallint NOT NULL CHECK (direction IN (1, 2)), -- 1 income, 2 expense
    type_id          bigint,
    type_dir         smallint GENERATED ALWAYS AS (46) STORED,
    category_id      bigint,
    category_dir     smallint GENERATED ALWAYS AS (47) STORED,
    money_account_id bigint NOT NULL,
    is_transfer      boolean NOT NULL DEFAULT false,
    note             text NOT NULL DEFAULT '',
    user_id          bigint NOT NULL,
    company_id       bigint,
    deal_id          bigint,
    tags             text[] NOT NULL DEFAULT '{}',
    created_by       bigint,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id),
    CONSTRAINT money_movements_company_fk FOREIGN KEY (account_id, company_id) REFERENCES companies (account_id, id),
    CONSTRAINT money_movements_deal_fk FOREIGN KEY (account_id, deal_id) REFERENCES deals (account_id, id), -- also without a counterparty
    CONSTRAINT money_movements_company_deal_fk FOREIGN KEY (account_id, company_id, deal_id) REFERENCES deals (account_id, company_id, id),
    CONSTRAINT money_movements_type_fk FOREIGN KEY (account_id, type_dir, type_id) REFERENCES directory_values (account_id, directory_code, id),
    CONSTRAINT money_movements_category_fk FOREIGN KEY (account_id, category_dir, category_id) REFERENCES directory_values (account_id, directory_code, id),
    CONSTRAINT money_movements_money_account_fk FOREIGN KEY (account_id, money_account_id) REFERENCES money_accounts (account_id, id),
    CONSTRAINT money_movements_user_fk FOREIGN KEY (account_id, user_id) REFERENCES users (account_id, id),
    CONSTRAINT money_movements_created_by_fk FOREIGN KEY (account_id, created_by) REFERENCES users (account_id, id)
);
CREATE INDEX money_movements_company ON money_movements (account_id, company_id, id);
CREATE INDEX money_movements_deal ON money_movements (account_id, deal_id, id);
CREATE INDEX money_movements_user ON money_movements (account_id, user_id, id);

-- A user's mailbox at an outside mail provider. Secrets are encrypted by the server
-- with a key from its environment before they reach this table.
CREATE TABLE mail_accounts (
    account_id    bigint NOT NULL,
    id            bigint GENERATED ALWAYS AS IDENTITY,
    user_id       bigint NOT NULL,
    address       text NOT NULL CHECK (address <> ''),
    display_name  text NOT NULL DEFAULT '',
    smtp_host     text NOT NULL DEFAULT '',
    smtp_port     integer NOT NULL DEFAULT 587 CHECK (smtp_port BETWEEN 1 AND 65535),
    smtp_security text NOT NULL DEFAULT 'starttls' CHECK (smtp_security IN ('none', 'starttls', 'tls')),
    smtp_login    text NOT NULL DEFAULT '',
    smtp_secret   bytea,
    imap_host     text NOT NULL DEFAULT '',
    imap_port     integer NOT NULL DEFAULT 993 CHECK (imap_port BETWEEN 1 AND 65535),
    imap_security text NOT NULL DEFAULT 'tls' CHECK (imap_security IN ('none', 'starttls', 'tls')),
    imap_login    text NOT NULL DEFAULT '',
    imap_secret   bytea,
    active        boolean NOT NULL DEFAULT true,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id),
    CONSTRAINT mail_accounts_user_fk FOREIGN KEY (account_id, user_id) REFERENCES users (account_id, id)
);
CREATE INDEX mail_accounts_user ON mail_accounts (account_id, user_id);

-- folder: 1 inbox, 2 sent, 3 drafts, 4 trash, 5 spam, 6 more (the "segment" filter).
-- delivery_state is set on outgoing messages only.
CREATE TABLE mail_messages (
    account_id        bigint NOT NULL,
    id                bigint GENERATED ALWAYS AS IDENTITY,
    mail_account_id   bigint NOT NULL,
    folder            smallint NOT NULL CHECK (folder BETWEEN 1 AND 6),
    from_name         text NOT NULL DEFAULT '',
    from_address      text NOT NULL DEFAULT '',
    to_name           text NOT NULL DEFAULT '',
    to_address        text NOT NULL DEFAULT '',
    cc                text NOT NULL DEFAULT '',
    bcc               text NOT NULL DEFAULT '',
    subject           text NOT NULL DEFAULT '',
    date              timestamptz NOT NULL DEFAULT now(),
    company_id        bigint,
    contact_id        bigint,
    deal_id           bigint,
    message_id        text NOT NULL DEFAULT '',
    attachment_flag   boolean NOT NULL DEFAULT false,
    small_part_of_body text NOT NULL DEFAULT '' CHECK (char_length(small_part_of_body) <= 255),
    body              text NOT NULL DEFAULT '',
    delivery_state    text CHECK (delivery_state IN ('queued', 'sending', 'sent', 'failed')),
    attempts          integer NOT NULL DEFAULT 0,
    next_attempt_at   timestamptz,
    last_error        text NOT NULL DEFAULT '',
    created_by        bigint,
    created_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id),
    CONSTRAINT mail_messages_mail_account_fk FOREIGN KEY (account_id, mail_account_id) REFERENCES mail_accounts (account_id, id),
    CONSTRAINT mail_messages_company_fk FOREIGN KEY (account_id, company_id) REFERENCES companies (account_id, id),
    CONSTRAINT mail_messages_contact_fk FOREIGN KEY (account_id, contact_id) REFERENCES contacts (account_id, id),
    CONSTRAINT mail_messages_deal_fk FOREIGN KEY (account_id, deal_id) REFERENCES deals (account_id, id),
    -- With a counterparty, its contact person and deal must be its own.
    CONSTRAINT mail_messages_company_contact_fk FOREIGN KEY (account_id, company_id, contact_id) REFERENCES contacts (account_id, company_id, id),
    CONSTRAINT mail_messages_company_deal_fk FOREIGN KEY (account_id, company_id, deal_id) REFERENCES deals (account_id, company_id, id),
    CONSTRAINT mail_messages_created_by_fk FOREIGN KEY (account_id, created_by) REFERENCES users (account_id, id)
);
CREATE INDEX mail_messages_mailbox ON mail_messages (account_id, mail_account_id, folder, id);
CREATE INDEX mail_messages_outbox ON mail_messages (next_attempt_at) WHERE delivery_state = 'queued';

-- A KPI plan belongs to a user and a calendar month; each item measures one metric.
CREATE TABLE kpi_plans (
    account_id bigint NOT NULL,
    id         bigint GENERATED ALWAYS AS IDENTITY,
    user_id    bigint NOT NULL,
    month      date NOT NULL CHECK (extract(day FROM month) = 1),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id),
    UNIQUE (account_id, user_id, month),
    CONSTRAINT kpi_plans_user_fk FOREIGN KEY (account_id, user_id) REFERENCES users (account_id, id)
);

CREATE TABLE kpi_plan_items (
    account_id bigint NOT NULL,
    id         bigint GENERATED ALWAYS AS IDENTITY,
    plan_id    bigint NOT NULL,
    name       text NOT NULL CHECK (name <> ''),
    metric     text NOT NULL CHECK (metric IN ('companies_added', 'tasks_done', 'deals_created', 'deal_sum',
                                               'invoices_issued', 'invoice_sum', 'income')),
    measure    text GENERATED ALWAYS AS (CASE WHEN metric IN ('deal_sum', 'invoice_sum', 'income') THEN 'amount' ELSE 'count' END) STORED,
    plan_value numeric(18, 2) NOT NULL CHECK (plan_value > 0),
    PRIMARY KEY (account_id, id),
    UNIQUE (account_id, plan_id, metric),
    CONSTRAINT kpi_plan_items_plan_fk FOREIGN KEY (account_id, plan_id) REFERENCES kpi_plans (account_id, id)
);

-- Ready filters of the universal list ("user_filter_ids"): saved filter definitions
-- (a JSON object of list filter parameters) made by an admin.
CREATE TABLE user_filters (
    account_id bigint NOT NULL,
    id         bigint GENERATED ALWAYS AS IDENTITY,
    module     smallint NOT NULL CHECK (module IN (1, 20, 24)),
    name       text NOT NULL CHECK (name <> ''),
    definition jsonb NOT NULL CHECK (jsonb_typeof(definition) = 'object'),
    created_by bigint,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id),
    CONSTRAINT user_filters_created_by_fk FOREIGN KEY (account_id, created_by) REFERENCES users (account_id, id)
);

-- Additional fields of counterparties (module 1) and deals (module 20), read as
-- ADD_{name} columns; values live in the record's extra column under the name.
CREATE TABLE field_definitions (
    account_id bigint NOT NULL REFERENCES accounts (id),
    id         bigint GENERATED ALWAYS AS IDENTITY,
    module     smallint NOT NULL CHECK (module IN (1, 20)),
    name       text NOT NULL CHECK (name ~ '^[A-Za-z0-9_]{1,63}$'),
    title      text NOT NULL DEFAULT '',
    type       text NOT NULL DEFAULT 'text' CHECK (type IN ('text', 'number', 'date', 'boolean')),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, id),
    UNIQUE (account_id, module, name)
);

-- The journal: one row per mutation, written in the mutation's transaction.
CREATE TABLE journal (
    account_id bigint NOT NULL,
    id         bigint GENERATED ALWAYS AS IDENTITY,
    at         timestamptz NOT NULL DEFAULT now(),
    user_id    bigint,
    token_id   bigint,
    module     smallint NOT NULL,            -- module code of the universal list (1, 2, 4, 20, 24, ...)
    entity     text NOT NULL,                -- company, contact, phone, email, requisites, task, deal, ...
    record_id  bigint NOT NULL,
    action     text NOT NULL CHECK (action IN ('insert', 'update', 'delete', 'send', 'receive')),
    changes    jsonb NOT NULL DEFAULT '{}',
    PRIMARY KEY (account_id, id),
    CONSTRAINT journal_user_fk FOREIGN KEY (account_id, user_id) REFERENCES users (account_id, id),
    CONSTRAINT journal_token_fk FOREIGN KEY (account_id, token_id) REFERENCES tokens (account_id, id)
);
CREATE INDEX journal_record ON journal (account_id, module, record_id);
