/**
 * An exact decimal (PostgreSQL numeric: amounts, prices, quantities, discounts, VAT rates) as the
 * decimal text the server sent, such as "1234567890123456.78": a JS number would lose digits.
 */
export type Decimal = string;
/** A decimal a request takes: its text (written as a JSON number, every digit kept) or a JS number. */
export type DecimalInput = Decimal | number;
/** A value of the field's directory; `null` removes the value (the field becomes empty). */
export type ClearableDirectoryId = number | null;
/** A counterparty as the card shows it; `ADD_{name}` members carry additional fields. */
export type Company = {
    activity_type: string;
    address: string;
    agent: string;
    agent_id: number | null;
    category: string;
    category_id: number | null;
    city: string;
    country: string;
    created: DateTime;
    /** The name of the user who added it, or how it was added (api, import, mail, ...). */
    created_by: string;
    external_code: string;
    first_name: string;
    group: string;
    group_id: number | null;
    id: number;
    info_source: string;
    last_name: string;
    middle_name: string;
    name: string;
    note: string;
    /** `1` legal entity, `2` private person. */
    person: 1 | 2;
    property_form: string;
    region: string;
    status: string;
    status_id: number | null;
    /** Comma-separated tags. */
    tags: string;
    /** inn of the default requisites; "" without them. */
    tax_id: string;
    type: string;
    type_id: number;
    url: string;
    user_id: number;
    user_name: string;
    utm_campaign: string;
    utm_content: string;
    utm_medium: string;
    utm_source: string;
    utm_term: string;
    which_host_source: string;
    which_link_source: string;
    which_site_source: string;
    [member: `ADD_${string}`]: unknown;
};
export type CompanyCard = {
    company: Company;
    contacts: Contact[];
    emails: EmailRecord[];
    phones: PhoneRecord[];
    requisites: RequisitesRecord[];
};
export type CompanyInsertRequest = {
    Contacts?: ContactInput[];
    Emails?: EmailInput[];
    Paymentdetails?: RequisitesFields;
    Phones?: PhoneInput[];
    activity_type?: string;
    address?: string;
    /** Agent (directory 48). */
    agent_id?: number;
    /** Category (directory 29). */
    category_id?: number;
    city?: string;
    country?: string;
    /** Code in an external accounting system. */
    external_code?: string;
    first_name?: string;
    /** Group (directory 49). */
    group_id?: number;
    info_source?: string;
    last_name?: string;
    middle_name?: string;
    /** Company name, or the full name of a private person. */
    name: string;
    note?: string;
    /** `1` legal entity, `2` private person; omitted: `1`. */
    person?: 1 | 2;
    property_form?: string;
    region?: string;
    /** Status (directory 10). */
    status_id?: number;
    /** Comma-separated tags. */
    tags?: string;
    /** Counterparty type (directory 9). */
    type_id: number;
    url?: string;
    /** Responsible user. */
    user_id: number;
    utm_campaign?: string;
    utm_content?: string;
    utm_medium?: string;
    utm_source?: string;
    utm_term?: string;
    which_host_source?: string;
    which_link_source?: string;
    which_site_source?: string;
};
/** `id` and at least one other field. */
export type CompanyUpdateRequest = {
    activity_type?: string;
    address?: string;
    agent_id?: ClearableDirectoryId;
    category_id?: ClearableDirectoryId;
    city?: string;
    country?: string;
    external_code?: string;
    first_name?: string;
    group_id?: ClearableDirectoryId;
    id: number;
    info_source?: string;
    last_name?: string;
    middle_name?: string;
    name?: string;
    note?: string;
    person?: 1 | 2;
    property_form?: string;
    region?: string;
    status_id?: ClearableDirectoryId;
    /** Comma-separated; replaces the old tags. */
    tags?: string;
    type_id?: number;
    url?: string;
    user_id?: number;
};
/** A contact person with their phones, e-mails and social networks. */
export type Contact = {
    Emails: EmailRecord[];
    Phones: PhoneRecord[];
    SocialNetworks: SocialNetwork[];
    company_id: number;
    company_name: string;
    created: DateTime;
    first_name: string;
    id: number;
    last_name: string;
    middle_name: string;
    /** Full name: last, first and middle name. */
    name: string;
    note: string;
    position: string;
    position_id: number | null;
    status: string;
    status_id: number | null;
};
/** A contact person inserted together with a counterparty. */
export type ContactInput = {
    Emails?: EmailInput[];
    Phones?: PhoneInput[];
    first_name?: string;
    last_name?: string;
    middle_name?: string;
    note?: string;
    /** Matched case-insensitively against the positions directory (42); added to it when new. */
    position?: string;
    /** Status of a contact person (directory 43). */
    status_id?: number;
};
export type ContactInsertRequest = {
    Emails?: EmailInput[];
    Phones?: PhoneInput[];
    company_id: number;
    first_name?: string;
    last_name?: string;
    middle_name?: string;
    note?: string;
    /** Matched case-insensitively against the positions directory (42); added to it when new. */
    position?: string;
    /** Status of a contact person (directory 43). */
    status_id?: number;
};
export type ContactInserted = {
    /** The inserted e-mails, in the order sent; null when none were sent. */
    EMAILS: InsertedEmail[] | null;
    /** The new contact person's id. */
    NEW_ID: number;
    /** The inserted phones, in the order sent; null when none were sent. */
    TELEPHONES: InsertedPhone[] | null;
};
export type ContactList = Contact[];
export type ContactSocialSetRequest = {
    SocialNetworks: SocialNetworkInput[];
    contact_id: number;
};
export type Counter = {
    mine: number;
    total: number;
};
export type DashboardTask = {
    company_id: number;
    company_name: string;
    date_finish: string | null;
    date_start: DateTime;
    deal_id: number | null;
    done: boolean;
    id: number;
    note: string;
    result: string;
    status: "in work" | "done";
    type: string;
};
/** `YYYY-MM-DD HH:MM:SS` in the token owner's time zone. */
export type DateTime = string;
export type DayDashboard = {
    companies_added: Counter;
    deals_created: SumCounter;
    forgotten_companies: Counter;
    invoices_issued: SumCounter;
    money: DayMoney;
    my_kpi: KpiMy;
    period: Period;
    tasks: DayTasks;
    user: DayUser;
};
export type DayMoney = {
    expense: Decimal;
    expense_count: number;
    income: Decimal;
    income_count: number;
    mine_income: Decimal;
};
export type DayTasks = {
    by_type: TaskTypeCounter[];
    done_total: number;
    mine_done: number;
    mine_overdue: number;
    mine_scheduled: number;
    overdue_total: number;
    scheduled_total: number;
};
export type DayUser = {
    id: number;
    name: string;
};
/**
 * A goods position given with a new deal. With `goods_id` (an active item of the
 * catalogue), omitted `discription`, `code`, `price`, `qnt` and `vat` are taken from the
 * catalogue; without it a non-empty `discription` is required and `qnt` defaults to 1,
 * `price` and `vat` to 0. `discount` defaults to 0.
 */
export type DealGoodsInput = {
    code?: string;
    /** Discount in percent. */
    discount?: DecimalInput;
    /** Line name (the spelling is part of the interface). */
    discription?: string;
    /** Catalogue goods. */
    goods_id?: number;
    note?: string;
    /** Unit price. */
    price?: DecimalInput;
    /** Quantity. */
    qnt?: DecimalInput;
    /** VAT rate in percent, included in the price. */
    vat?: DecimalInput;
};
export type DealGoodsList = DealGoodsPosition[];
export type DealGoodsPosition = {
    code: string;
    deal_id: number;
    /** Percent. */
    discount: Decimal;
    /** Line name (the spelling is part of the interface). */
    discription: string;
    goods_id: number | null;
    id: number;
    note: string;
    price: Decimal;
    qnt: Decimal;
    /** round(qnt × price × (100 − discount) / 100, 2). */
    sum: Decimal;
    /** Percent, included in the price. */
    vat: Decimal;
};
/** `id`, `deal_id` and at least one other field; 0 is a value here. */
export type DealGoodsUpdateRequest = {
    /** The deal the position belongs to. */
    deal_id: number;
    discount?: DecimalInput;
    /** Line name (the spelling is part of the interface). */
    discription?: string;
    /** Position id. */
    id: number;
    note?: string;
    price?: DecimalInput;
    qnt?: DecimalInput;
    vat?: DecimalInput;
};
export type DealInsertRequest = {
    Goods?: DealGoodsInput[];
    company_id: number;
    /** A contact person of the same counterparty. */
    contact_id?: number;
    /** Not before `date_start`. */
    date_finish: string;
    date_start: string;
    name: string;
    note?: string;
    /** Deal stage (directory 41). */
    status_id: number;
    /** Deal sum; not computed from the goods. */
    sum?: DecimalInput;
    /** Comma-separated tags. */
    tags?: string;
    /** Deal type (directory 40). */
    type_id: number;
    /** Responsible user. */
    user_id: number;
};
/** `id` and at least one other field that is not a numeric field equal to 0: such a field counts as not passed. */
export type DealUpdateRequest = {
    company_id?: number;
    contact_id?: number;
    date_finish?: string;
    date_start?: string;
    id: number;
    name?: string;
    /** Replaces the old note. */
    note?: string;
    /** The new stage. */
    status_id?: number;
    /** 0 counts as not passed. */
    sum?: DecimalInput;
    /** Comma-separated; replaces the old tags. */
    tags?: string;
    type_id?: number;
    user_id?: number;
};
export type DirectoryCatalog = DirectoryCatalogEntry[];
export type DirectoryCatalogEntry = {
    /** The directory's code, as in `GET /directory/{code}`. */
    code: 9 | 10 | 29 | 35 | 40 | 41 | 42 | 43 | 44 | 45 | 46 | 47 | 48 | 49;
    /** What the directory holds. */
    name: string;
    /** The number of its active values in the account. */
    values: number;
};
export type DirectoryEntry = {
    ID: number;
    NAME: string;
};
export type DirectoryList = DirectoryEntry[];
export type Document = {
    company_id: number;
    company_name: string;
    contact_id: number | null;
    date: string;
    date_expire: string | null;
    /** The deal's name; "" without a deal. */
    deal: string;
    deal_id: number | null;
    external_code: string;
    id: number;
    note: string;
    number: string;
    status: string;
    status_id: number | null;
    sum: Decimal;
    tags: string;
    type: string;
    type_id: number;
    user_id: number;
    user_name: string;
};
export type DocumentGoodsList = DocumentGoodsPosition[];
export type DocumentGoodsPosition = {
    code: string;
    /** Percent. */
    discount: Decimal;
    /** Line name (the spelling is part of the interface). */
    discription: string;
    document_id: number;
    goods_id: number | null;
    id: number;
    note: string;
    price: Decimal;
    qnt: Decimal;
    /** round(qnt × price × (100 − discount) / 100, 2). */
    sum: Decimal;
    /** Percent, included in the price. */
    vat: Decimal;
};
export type DocumentInsertRequest = {
    company_id: number;
    contact_id?: number;
    date: string;
    date_expire?: string;
    deal_id?: number;
    external_code?: string;
    note?: string;
    number?: string;
    /** Document status (directory 45). */
    status_id?: number;
    sum?: DecimalInput;
    tags?: string;
    /** Document type (directory 44). */
    type_id: number;
    /** Responsible user; the token owner by default. */
    user_id?: number;
};
export type DocumentList = Document[];
/** `1`: done. */
export type Done = 1;
/** An e-mail address (`local@domain.tld`, no spaces); compared case-insensitively. */
export type EmailAddress = string;
export type EmailInput = {
    email: EmailAddress;
};
export type EmailInsertRequest = {
    company_id: number;
    /** A contact person of the same counterparty. */
    contact_id?: number;
    email: EmailAddress;
};
export type EmailRecord = {
    company_id: number;
    email: string;
    id: number;
    /** The contact person it belongs to; null for the counterparty's own. */
    id_contact_man: number | null;
};
/**
 * An empty body, the JSON literal `null`, or `{}`. The universal list takes its
 * parameters in the query string only: a body with members is `"400"` saying so.
 */
export type EmptyBody = Record<string, never> | null;
/** The empty string. */
export type EmptyValue = string;
/** The reply of every operation; see the conventions in `info.description`. */
export type Envelope = {
    /** `null` on success (`"0"` for mail sending); the error code on failure. */
    code: string | null;
    /** `""` on success; the error text on failure; never `null`. */
    error: string;
    /** The page served, from 1 (lists); 0 for single-record operations. */
    page: number;
    /** `ceil(rows / records_onpage)` (lists); 0 for single-record operations. */
    pages: number;
    /** Records matching the filter in total (lists); 0 for single-record operations. */
    rows: number;
    /** `success`, `error`, or `Error` (only `GET /company/get` of a missing counterparty). */
    status: "success" | "error" | "Error";
    /** The payload as a string; its decoded form is the operation's `x-value-schema`. */
    value: string;
};
export type Event = {
    action: "insert" | "update" | "delete" | "send" | "receive" | "deliver" | "delivery_failed";
    changes: JournalChanges;
    date: DateTime;
    entity: string;
    /** The event's stable id (the journal row's id; the webhook-id of its deliveries). */
    id: number;
    /** Module code: 1, 2, 4, 5, 20, 24 or 60 (webhook subscriptions). */
    module: number;
    record_id: number;
    /** The token the change came through; null when none. */
    token_id: number | null;
    /** Who made the change; null for the server. */
    user_id: number | null;
    user_name: string;
};
export type EventPage = {
    /** Opaque; pass it as `cursor` to the next call. */
    cursor: string;
    events: Event[];
    /** True when events past `cursor` may remain; false when the client has caught up. */
    more: boolean;
};
export type Field = {
    id: number;
    module: 1 | 20;
    name: FieldName;
    title: string;
    type: "text" | "number" | "date" | "boolean";
};
export type FieldInsertRequest = {
    module: 1 | 20;
    name: FieldName;
    title?: string;
    /** The field's kind; omitted: `text`. */
    type?: "text" | "number" | "date" | "boolean";
};
export type FieldList = Field[];
/** Letters, digits and `_`; the list column is `ADD_{name}`. */
export type FieldName = string;
export type FieldUpdateRequest = {
    id: number;
    title: string;
};
/** Field name → value of the field's type. */
export type FieldValues = {
    [member: string]: unknown;
};
export type FieldValuesRequest = {
    /** The counterparty or deal. */
    id: number;
    module: 1 | 20;
    /** Names of fields whose values are removed. */
    remove?: FieldName[];
    values?: FieldValues;
};
export type Filter = {
    definition: FilterDefinition;
    id: number;
    module: 1 | 20 | 24;
    name: string;
};
/** Filter parameters of the universal list for the module, with string or number values. */
export type FilterDefinition = {
    [member: string]: (string | Decimal);
};
export type FilterInsertRequest = {
    definition: FilterDefinition;
    module: 1 | 20 | 24;
    name: string;
};
export type FilterList = Filter[];
export type FilterUpdateRequest = {
    definition?: FilterDefinition;
    id: number;
    name?: string;
};
export type FinanceInsertRequest = {
    /** Money account. */
    account_id: number;
    /** Income or expense item (directory 47). */
    category_id?: number;
    company_id?: number;
    date: string;
    deal_id?: number;
    /** `1` income, `2` expense; required unless to_account_id is given. */
    direction_id?: 1 | 2;
    note?: string;
    /** Amount in the base currency. */
    sum: DecimalInput;
    /** Amount in the money account's currency. */
    sum_currency?: DecimalInput;
    tags?: string;
    /** Target money account: the movement is a transfer. */
    to_account_id?: number;
    /** Amount in the target money account's currency. */
    to_sum_currency?: DecimalInput;
    /** Payment form (directory 46). */
    type_id?: number;
    user_id?: number;
};
export type Health = {
    status: "ok";
};
export type IdRequest = {
    id: number;
};
export type InsertedEmail = {
    email: string;
    id: number;
};
export type InsertedPhone = {
    descr: string;
    id: number;
    phone: string;
};
/**
 * What a journal row changed: for an insert the stored fields (`{"name": "Contoso", ...}`),
 * for an update each changed field with its old and new value (`{"note": ["old", "new"]}`).
 */
export type JournalChanges = Record<string, unknown> | null;
export type KpiItem = {
    /** What the records of the planned days give. */
    actual: Decimal;
    /** `amount` for deal_sum, invoice_sum and income (base currency), `count` otherwise. */
    measure: "count" | "amount";
    /** The item's name in the latest month of the period that plans its metric. */
    name: string;
    /** The monthly plan values recalculated to the period, rounded to cents. */
    plan: Decimal;
    /** actual / plan in percent, at most 100, rounded to two decimals. */
    progress_percent: Decimal;
};
/** Only `has_kpi` (false) when the user has no KPI plan for a month of the period. */
export type KpiMy = {
    has_kpi: boolean;
    month_items?: KpiItem[];
    month_to_date?: Period;
    /** The average progress of the items of `date_to`'s month from its first day to `date_to`; null when that month has no plan. */
    month_to_date_progress_percent?: Decimal | null;
    period?: Period;
    /** The average progress of `month_items`. */
    period_progress_percent?: Decimal;
};
export type KpiTeam = {
    departments: KpiTeamDepartment[] | null;
    /** `ok`, or why `departments` is null. */
    departments_access: string;
    period: Period;
    users: KpiTeamUser[] | null;
    /** `ok`, or why `users` is null. */
    users_access: string;
};
export type KpiTeamDepartment = {
    department_id: number;
    name: string;
    progress_percent: Decimal;
};
export type KpiTeamUser = {
    /** The department's name; "" for a user without a department. */
    department: string;
    /** null for a user without a department. */
    department_id: number | null;
    name: string;
    progress_percent: Decimal;
    user_id: number;
};
/**
 * One record of the universal list, with exactly the requested columns. The types of
 * the columns every module may have are below; `ADD_{name}` columns carry additional
 * fields (a string, number, boolean or null by the field's type).
 */
export type ListRow = {
    account?: string | null;
    account_id?: number | null;
    action?: string | null;
    activity_type?: string | null;
    address?: string | null;
    agent?: string | null;
    agent_id?: number | null;
    attachment_flag?: 0 | 1 | null;
    bcc?: string | null;
    body?: string | null;
    category?: string | null;
    category_id?: number | null;
    cc?: string | null;
    changes?: JournalChanges;
    city?: string | null;
    code?: string | null;
    company_category?: string | null;
    company_category_id?: number | null;
    company_city?: string | null;
    company_country?: string | null;
    company_id?: number | null;
    company_name?: string | null;
    company_region?: string | null;
    company_status?: string | null;
    company_status_id?: number | null;
    company_tax_id?: string | null;
    company_type?: string | null;
    company_type_id?: number | null;
    company_url?: string | null;
    contact?: string | null;
    contact_id?: number | null;
    country?: string | null;
    created?: string | null;
    created_by?: string | null;
    currency?: string | null;
    date?: string | null;
    date_expire?: string | null;
    date_finish?: string | null;
    date_start?: string | null;
    deal?: string | null;
    deal_id?: number | null;
    direction?: string | null;
    direction_id?: number | null;
    discount?: Decimal | null;
    discription?: string | null;
    document_id?: number | null;
    entity?: string | null;
    external_code?: string | null;
    first_name?: string | null;
    from?: string | null;
    from_address?: string | null;
    goods_id?: number | null;
    id?: number;
    info_source?: string | null;
    is_hot?: number | null;
    last_name?: string | null;
    message_id?: string | null;
    middle_name?: string | null;
    module?: number | null;
    name?: string | null;
    note?: string | null;
    number?: string | null;
    person?: number | null;
    price?: Decimal | null;
    property_form?: string | null;
    qnt?: Decimal | null;
    record_id?: number | null;
    region?: string | null;
    result?: string | null;
    small_part_of_body?: string | null;
    status?: string | null;
    status_id?: number | null;
    subject?: string | null;
    sum?: Decimal | null;
    sum_currency?: Decimal | null;
    tags?: string | null;
    tax_id?: string | null;
    to?: string | null;
    to_address?: string | null;
    type?: string | null;
    type_id?: number | null;
    unit?: string | null;
    url?: string | null;
    user_id?: number | null;
    user_name?: string | null;
    utm_campaign?: string | null;
    utm_content?: string | null;
    utm_medium?: string | null;
    utm_source?: string | null;
    utm_term?: string | null;
    vat?: Decimal | null;
    which_host_source?: string | null;
    which_link_source?: string | null;
    which_site_source?: string | null;
    [member: `ADD_${string}`]: unknown;
};
export type ListRows = ListRow[];
/**
 * `YYYY-MM-DD HH:MM`, or `YYYY-MM-DD HH:MM:SS` as the task lists return it, in the token
 * owner's time zone. Seconds given are kept.
 */
export type LocalMinute = string;
export type MailAccountItem = {
    /** `false`: disabled; sends nothing and is not polled. */
    active: boolean;
    address: string;
    display_name: string;
    id: number;
    /** The owner, the only user who sends through it. */
    user_id: number;
    user_name: string;
};
export type MailAccountList = MailAccountItem[];
export type MailMessageInput = {
    /** Id of a mail account of the token owner, in decimal digits. */
    account_id: string;
    /** Hidden copy recipients, comma-separated, as in to_address; in no header. */
    bcc?: string;
    /** Base64 (standard or URL-safe, padding optional) of the UTF-8 HTML body. */
    body: string;
    /** Copy recipients, comma-separated, as in to_address. */
    cc?: string;
    /** The counterparty the message concerns. */
    company_id?: number;
    /** The contact person; must belong to company_id when both are given. */
    contact_id?: number;
    /** The deal; must belong to company_id when both are given. */
    deal_id?: number;
    /** Base64 (standard or URL-safe, padding optional) of the UTF-8 subject; no line breaks. */
    subject: string;
    /** Recipient addresses, comma-separated, each `local@domain.tld` or `Name <local@domain.tld>`. */
    to_address: string;
};
export type MailSendRequest = {
    mail: MailMessageInput;
};
export type MoneyAccount = {
    active: boolean;
    currency: string;
    id: number;
    name: string;
};
export type MoneyAccountList = MoneyAccount[];
export type MoneyMovement = {
    account: string;
    /** Money account. */
    account_id: number;
    category: string;
    /** Income or expense item. */
    category_id: number | null;
    company_id: number | null;
    company_name: string;
    currency: string;
    date: string;
    deal_id: number | null;
    direction: "income" | "expense";
    /** `1` income, `2` expense. */
    direction_id: 1 | 2;
    id: number;
    note: string;
    /** Amount in the base currency. */
    sum: Decimal;
    /** Amount in the money account's currency. */
    sum_currency: Decimal;
    tags: string;
    type: string;
    /** Payment form. */
    type_id: number | null;
    user_id: number;
    user_name: string;
};
export type MoneyMovementList = MoneyMovement[];
export type MyTasksDashboard = {
    date: string;
    overdue: OverdueTasks;
    today: TodayTasks;
};
/** The id of the new record. */
export type NewId = number;
/** The ids of the new records. */
export type NewIdList = number[];
export type OverdueTasks = {
    shown: number;
    tasks: DashboardTask[];
    total: number;
};
export type Period = {
    date_from: string;
    date_to: string;
};
export type PhoneInput = {
    /** Kind of phone, such as reception, mobile, orders. */
    descr?: string;
    phone: PhoneNumber;
};
export type PhoneInsertRequest = {
    company_id: number;
    /** A contact person of the same counterparty. */
    contact_id?: number;
    descr?: string;
    phone: PhoneNumber;
};
/** A phone number; digits with optional `+`, spaces, brackets, dots and dashes. Searches compare only its digits. */
export type PhoneNumber = string;
export type PhoneRecord = {
    company_id: number;
    descr: string;
    id: number;
    /** The contact person it belongs to; null for the counterparty's own. */
    id_contact_man: number | null;
    phone: string;
};
/** Requisites of a legal entity (`Paymentdetails` of a counterparty insert). */
export type RequisitesFields = {
    /** Actual address. */
    adres_fact?: string;
    /** Legal address. */
    adres_yur?: string;
    bank_name?: string;
    /** Bank code. */
    bik?: string;
    /** Head of the organisation. */
    dir_name?: string;
    /** Position of the head. */
    dir_status?: string;
    /** Full name with the form of ownership. */
    full_name?: string;
    /** Chief accountant. */
    gl_buh?: string;
    /** Taxpayer code. */
    inn?: string;
    kpp?: string;
    /** Short name with the form of ownership. */
    kr_name?: string;
    /** Correspondent account. */
    ks?: string;
    ogrn_client?: string;
    okato?: string;
    okpo?: string;
    oktmo?: string;
    okved?: string;
    /** Postal address. */
    pocht_adr?: string;
    /** Note. */
    requis_prim?: string;
    /** Settlement account. */
    rs?: string;
    /** Ignored here: the requisites given with a new counterparty are its default ones. */
    use_default?: "True" | "False";
};
export type RequisitesInsertRequest = {
    adres_fact?: string;
    adres_yur?: string;
    bank_name?: string;
    bik?: string;
    dir_name?: string;
    dir_status?: string;
    full_name?: string;
    gl_buh?: string;
    /** Counterparty. */
    id_company: number;
    /** Taxpayer code. */
    inn?: string;
    kpp?: string;
    kr_name?: string;
    ks?: string;
    ogrn_client?: string;
    okato?: string;
    okpo?: string;
    oktmo?: string;
    okved?: string;
    pocht_adr?: string;
    requis_prim?: string;
    rs?: string;
    /** `True` makes these the default requisites. Omitted: `True` for the first requisites, otherwise `False`. */
    use_default?: "True" | "False";
};
export type RequisitesRecord = {
    adres_fact: string;
    adres_yur: string;
    bank_name: string;
    bik: string;
    dir_name: string;
    dir_status: string;
    full_name: string;
    gl_buh: string;
    id: number;
    id_company: number;
    inn: string;
    kpp: string;
    kr_name: string;
    ks: string;
    ogrn_client: string;
    okato: string;
    okpo: string;
    oktmo: string;
    okved: string;
    pocht_adr: string;
    requis_prim: string;
    rs: string;
    use_default: "True" | "False";
};
export type SocialNetwork = {
    /** Profile address or handle. */
    address: string;
    id: number;
    /** Name of the network, such as linkedin, telegram, facebook. */
    network: string;
};
export type SocialNetworkInput = {
    address: string;
    network: string;
};
export type SocialNetworkList = SocialNetwork[];
export type SumCounter = {
    mine: number;
    mine_sum: Decimal;
    total: number;
    total_sum: Decimal;
};
export type Task = {
    /** Who assigned the task. */
    assigner_id: number;
    company_id: number;
    company_name: string;
    contact_id: number | null;
    /** `YYYY-MM-DD HH:MM:SS`, or null. */
    date_finish: string | null;
    date_start: DateTime;
    deal_id: number | null;
    id: number;
    is_hot: 0 | 1;
    note: string;
    result: string;
    status: "in work" | "done";
    /** `1` in work, `2` done. */
    status_id: 1 | 2;
    tags: string;
    type: string;
    type_id: number;
    /** Assignee. */
    user_id: number;
    user_name: string;
};
export type TaskInsertRequest = {
    company_id: number;
    /** A contact person of the same counterparty. */
    contact_id?: number;
    date_finish?: LocalMinute;
    date_start?: LocalMinute;
    /** A deal of the same counterparty. */
    deal_id?: number;
    /** `1` marks an urgent task; omitted: `0`. */
    is_hot?: 0 | 1;
    /** Task text. */
    note: string;
    /** Minutes before the start to remind the assignee. */
    reminder_minutes?: number;
    /** `1` in work, `2` done; omitted: `1`. */
    status_id?: 1 | 2;
    /** Comma-separated tags. */
    tags?: string;
    /** Kind of task (directory 35). */
    type_id: number;
    /** Assignee; the token owner by default. */
    user_id?: number;
};
export type TaskList = Task[];
export type TaskTypeCounter = {
    /** Tasks of the kind done in the period. */
    done: number;
    mine: number;
    mine_done: number;
    /** Tasks of the kind scheduled in the period. */
    total: number;
    /** The name of the kind of task (directory 35). */
    type: string;
};
export type TaskUpdateRequest = {
    /** `YYYY-MM-DD HH:MM` or `YYYY-MM-DD HH:MM:SS` in the token owner's time zone, or `""` for no deadline. */
    date_finish?: string;
    date_start?: LocalMinute;
    id: number;
    is_hot?: 0 | 1;
    note?: string;
    /** Result of execution. */
    result?: string;
    /** `2` finishes the task (completion time now), `1` reopens it. */
    status_id?: 1 | 2;
    /** Comma-separated; replaces the old tags. */
    tags?: string;
    type_id?: number;
    /** The new assignee. */
    user_id?: number;
};
export type TodayTasks = {
    done: number;
    tasks: DashboardTask[];
    total: number;
};
export type UserList = UserListItem[];
export type UserListItem = {
    /** `false`: deactivated; keeps their records, gets no new ones. */
    active: boolean;
    /** The department's name, `""` for none. */
    department: string;
    /** `null` for a user in no department. */
    department_id: number | null;
    id: number;
    name: string;
    role: UserRole;
};
export type UserMe = {
    /** The account's base currency (ISO 4217). */
    base_currency: string;
    /** The department's name, `""` for none. */
    department: string;
    /** `null` for a user in no department. */
    department_id: number | null;
    id: number;
    kpi_departments_report: boolean;
    kpi_users_report: boolean;
    name: string;
    role: UserRole;
    /** IANA name of the time zone of every date-time the token reads and writes. */
    time_zone: string;
};
/** `admin` sees every record of the account, `head` those of the users of their department and their own, `member` their own. */
export type UserRole = "admin" | "head" | "member";
export type Webhook = {
    actions: string[];
    active: boolean;
    created: DateTime;
    description: string;
    /** `YYYY-MM-DD HH:MM:SS`, or null. */
    disabled_at: string | null;
    /** Why the server disabled the subscription; "" otherwise. */
    disabled_reason: string;
    /** When the event at the head began to fail, or null. */
    failing_since: string | null;
    id: number;
    modules: number[];
    url: string;
};
/** Actions delivered; empty or omitted for all. */
export type WebhookActions = Array<"insert" | "update" | "delete" | "send" | "receive" | "deliver" | "delivery_failed">;
export type WebhookDelivery = {
    attempt: number;
    date: DateTime;
    duration_ms: number;
    error: string;
    event_id: number | null;
    id: number;
    outcome: "delivered" | "failed" | "test" | "test_failed";
    status_code: number | null;
    /** `{entity}.{action}`, or `webhook.test`. */
    type: string;
};
export type WebhookDeliveryList = WebhookDelivery[];
export type WebhookInsertRequest = {
    actions?: WebhookActions;
    description?: string;
    modules?: WebhookModules;
    secret?: WebhookSecretValue;
    /** https:// or http:// URL of the receiver. */
    url: string;
};
export type WebhookList = Webhook[];
/** Modules whose events are delivered; empty or omitted for all. */
export type WebhookModules = Array<1 | 2 | 4 | 5 | 20 | 24 | 60>;
export type WebhookSecret = {
    id: number;
    /** The secret when it was made or changed now; otherwise null. */
    secret: string | null;
};
/** `whsec_` and the Base64 of 24 to 64 bytes (Standard Webhooks); the HMAC key is the decoded bytes. */
export type WebhookSecretValue = string;
export type WebhookTestOutcome = {
    delivered: boolean;
    duration_ms: number;
    error: string;
    status_code: number | null;
    /** The webhook-id header sent. */
    webhook_id: string;
};
export type WebhookUpdateRequest = {
    actions?: WebhookActions;
    /** false pauses deliveries; true resumes them (also after the server disabled the subscription). */
    active?: boolean;
    description?: string;
    id: number;
    modules?: WebhookModules;
    /** true makes a new secret. */
    rotate_secret?: boolean;
    secret?: WebhookSecretValue;
    url?: string;
};
/** The modules of the universal list (`commonListPaging`), from x-list-modules. */
export interface ListModules {
    /** counterparties */
    1: {
        columns: "id" | "name" | "address" | "created" | "city" | "region" | "country" | "activity_type" | "property_form" | "type_id" | "type" | "created_by" | "info_source" | "first_name" | "middle_name" | "last_name" | "url" | "user_id" | "user_name" | "person" | "note" | "external_code" | "category_id" | "category" | "status_id" | "status" | "agent_id" | "agent" | "tax_id" | "which_site_source" | "which_host_source" | "which_link_source" | "utm_campaign" | "utm_source" | "utm_medium" | "utm_content" | "utm_term";
        additional: `ADD_${string}`;
    };
    /** tasks */
    2: {
        columns: "id" | "note" | "status_id" | "status" | "type_id" | "type" | "date_start" | "date_finish" | "result" | "user_id" | "user_name" | "company_id" | "company_name" | "deal_id" | "contact_id" | "is_hot" | "tags";
        additional: never;
    };
    /** documents */
    4: {
        columns: "id" | "number" | "date" | "sum" | "type_id" | "type" | "status_id" | "status" | "note" | "user_id" | "user_name" | "company_id" | "company_name" | "deal_id" | "deal" | "contact_id" | "date_expire" | "external_code" | "tags";
        additional: never;
    };
    /** finance */
    5: {
        columns: "id" | "date" | "sum" | "sum_currency" | "direction_id" | "direction" | "type_id" | "type" | "category_id" | "category" | "account_id" | "account" | "currency" | "note" | "user_id" | "user_name" | "company_id" | "company_name" | "deal_id" | "tags";
        additional: never;
    };
    /** sales */
    6: {
        columns: "id" | "date" | "document_id" | "number" | "company_id" | "company_name" | "deal_id" | "goods_id" | "discription" | "code" | "qnt" | "price" | "discount" | "vat" | "sum" | "user_id" | "user_name";
        additional: never;
    };
    /** deals */
    20: {
        columns: "id" | "name" | "sum" | "type_id" | "type" | "status_id" | "status" | "company_id" | "company_name" | "company_type" | "company_status" | "company_category" | "company_tax_id" | "company_country" | "company_region" | "company_city" | "company_url" | "user_id" | "user_name" | "note";
        additional: `ADD_${string}`;
    };
    /** goods */
    21: {
        columns: "id" | "name" | "code" | "unit" | "price" | "qnt" | "vat" | "note";
        additional: never;
    };
    /** mail */
    24: {
        columns: "id" | "from" | "from_address" | "to" | "to_address" | "cc" | "bcc" | "subject" | "date" | "user_name" | "company_id" | "company_name" | "contact_id" | "contact" | "company_type_id" | "company_type" | "company_category_id" | "company_category" | "company_status_id" | "company_status" | "deal_id" | "deal" | "message_id" | "attachment_flag" | "small_part_of_body" | "body";
        additional: never;
    };
    /** journal */
    50: {
        columns: "id" | "date" | "user_id" | "user_name" | "module" | "entity" | "record_id" | "action" | "changes";
        additional: never;
    };
}
/** Each operation's parameters (path and query; headers go in CallOptions), request body and decoded value. */
export interface Operations {
    /** POST /common/list/paging/{module}: Paged list of the records of one module */
    commonListPaging: {
        params: {
            /** Module code. */
            module: 1 | 2 | 4 | 5 | 6 | 20 | 21 | 24 | 50;
            /** Comma-separated column names of the module; required for every module but mail. */
            columns?: string;
            /** Records per page, at most 500. */
            records_onpage?: number;
            /** Page number, from 1, at most 1000000. */
            page?: number;
            /** Column to sort by (any column of the module); `id` by default. */
            sorting_column?: string;
            /** `0` ascending, `1` descending (default). */
            sorting_direction?: 0 | 1;
            /** Only records of one counterparty (tasks, documents, finance, sales, deals, mail). */
            company_id?: number;
            /** Only records of one deal (tasks, documents, finance, sales, mail). */
            deal_id?: number;
            /** One record (counterparties, deals, goods, mail, journal). */
            id?: number;
            /**
             * One id or comma-separated ids of responsible users (all modules). It only narrows
             * what the token owner may see. For mail it selects whose mail accounts to view;
             * without it, mail shows the token owner's own mail accounts. Empty (`user_ids=`)
             * means the same as omitted (for mail: the token owner's own mail, as note 2 of the
             * interface says).
             */
            user_ids?: string;
            /**
             * From this day, inclusive (tasks: start; documents and sales: document date;
             * finance: movement date; deals: start date; mail: message date; journal: time of the
             * change; days of the token owner's time zone). `YYYY-MM-DD`, or `YYYY.MM.DD` as the
             * interface's mail filter writes it.
             */
            date1?: string;
            /** To this date, inclusive; the same dates and formats as `date1`. */
            date2?: string;
            /** Comma-separated tags; a record matches when it has every one (tasks, documents, finance, deals). */
            tags?: string;
            /** Deal type (deals). */
            type_id?: number;
            /** Deal stage (deals). */
            status_id?: number;
            /** Part of the name, case-insensitive (counterparties, goods). */
            name?: string;
            /** E-mail of the counterparty or of one of its contact persons, the whole address, case-insensitive (counterparties). */
            email?: string;
            /** Phone of the counterparty or of one of its contact persons whose digits end with the digits given (at least 3), whatever the formatting (counterparties). */
            phone?: string;
            /** Taxpayer code of the default requisites (counterparties); a counterparty without default requisites never matches. */
            tax_id?: string;
            /** One id or comma-separated ids of ready filters of the module, applied together (counterparties, deals, mail). */
            user_filter_ids?: string;
            /** Mail folder: 1 inbox, 2 sent, 3 drafts, 4 trash, 5 spam, 6 more (mail). */
            segment?: 1 | 2 | 3 | 4 | 5 | 6;
            /** Part of the subject, case-insensitive (mail). */
            subject?: string;
            /** Recipient address, case-insensitive (mail). */
            to_address?: string;
            /** Sender address, case-insensitive (mail). */
            from_address?: string;
        };
        body: never;
        value: ListRows;
    };
    /** POST /company/delete: Delete a counterparty */
    companyDelete: {
        params: Record<string, never>;
        body: IdRequest;
        value: Done;
    };
    /** POST /company/email/insert: Add an e-mail to a counterparty or one of its contact persons */
    companyEmailInsert: {
        params: Record<string, never>;
        body: EmailInsertRequest;
        value: NewId;
    };
    /** GET /company/get: The card of one counterparty */
    companyGet: {
        params: {
            /** Counterparty id. */
            id: number;
        };
        body: never;
        value: CompanyCard;
    };
    /** POST /company/insert: Add a counterparty */
    companyInsert: {
        params: {
            /** When true, refuse to create a counterparty whose e-mail already belongs to one. */
            check_duplicates?: boolean;
        };
        body: CompanyInsertRequest;
        value: NewId;
    };
    /** POST /company/phone/insert: Add a phone to a counterparty or one of its contact persons */
    companyPhoneInsert: {
        params: Record<string, never>;
        body: PhoneInsertRequest;
        value: NewId;
    };
    /** POST /company/requisites/insert: Add requisites to a counterparty */
    companyRequisitesInsert: {
        params: Record<string, never>;
        body: RequisitesInsertRequest;
        value: NewId;
    };
    /** POST /company/update: Change fields of a counterparty */
    companyUpdate: {
        params: Record<string, never>;
        body: CompanyUpdateRequest;
        value: Done;
    };
    /** POST /contact/insert: Add a contact person to a counterparty */
    contactInsert: {
        params: Record<string, never>;
        body: ContactInsertRequest;
        value: ContactInserted;
    };
    /** GET /contact/list: Paged list of contact persons */
    contactList: {
        params: {
            /** Page number, from 1, at most 1000000. */
            page?: number;
            /** Records per page, at most 200. */
            records_onpage?: number;
            /** Part of the full name, case-insensitive. */
            name?: string;
            /** All contact persons of this counterparty; the other parameters are then ignored. */
            company_id?: number;
        };
        body: never;
        value: ContactList;
    };
    /** POST /contact/social/set: Set the social networks of a contact person */
    contactSocialSet: {
        params: Record<string, never>;
        body: ContactSocialSetRequest;
        value: SocialNetworkList;
    };
    /** GET /dashboard/kpi/my: KPI of the token owner */
    dashboardKpiMy: {
        params: {
            /** First day of the period (default the first day of `date_to`'s month). */
            date_from?: string;
            /** Last day of the period (default today in the token owner's time zone). */
            date_to?: string;
        };
        body: never;
        value: KpiMy;
    };
    /** GET /dashboard/kpi/team: KPI of the staff and departments */
    dashboardKpiTeam: {
        params: {
            /** First day of the period (default the first day of `date_to`'s month). */
            date_from?: string;
            /** Last day of the period (default today in the token owner's time zone). */
            date_to?: string;
            /** Only the staff of this department; the department list is then not returned. */
            department_id?: number;
        };
        body: never;
        value: KpiTeam;
    };
    /** GET /dashboard/my/day: Day summary of the token owner */
    dashboardMyDay: {
        params: {
            /** First day of the period (default today in the token owner's time zone). */
            date?: string;
            /** Last day of the period (default `date`); at most 365 days after `date`. */
            date_to?: string;
        };
        body: never;
        value: DayDashboard;
    };
    /** GET /dashboard/my/tasks: Today's and overdue tasks of the token owner */
    dashboardMyTasks: {
        params: {
            /** The day (default today in the token owner's time zone). */
            date?: string;
            /** How many overdue tasks to list, 1 to 100. */
            overdue_limit?: number;
        };
        body: never;
        value: MyTasksDashboard;
    };
    /** POST /deal/goods/insert: Add catalogue goods to a deal */
    dealGoodsInsert: {
        params: {
            /** Deal. */
            deal_id: number;
            /** Comma-separated ids of the goods catalogue; an id may repeat (one position each time). */
            goods_ids: string;
        };
        body: never;
        value: Done;
    };
    /** GET /deal/goods/list: Goods positions of a deal */
    dealGoodsList: {
        params: {
            /** Deal. */
            deal_id: number;
        };
        body: never;
        value: DealGoodsList;
    };
    /** POST /deal/goods/update: Change one goods position of a deal */
    dealGoodsUpdate: {
        params: Record<string, never>;
        body: DealGoodsUpdateRequest;
        value: DealGoodsPosition;
    };
    /** POST /deal/insert: Add a deal */
    dealInsert: {
        params: Record<string, never>;
        body: DealInsertRequest;
        value: NewId;
    };
    /** POST /deal/update: Change fields of a deal */
    dealUpdate: {
        params: Record<string, never>;
        body: DealUpdateRequest;
        value: Done;
    };
    /** GET /directory/{code}: Values of one directory */
    directoryGet: {
        params: {
            /** Directory code. */
            code: 9 | 10 | 29 | 35 | 40 | 41 | 42 | 43 | 44 | 45 | 46 | 47 | 48 | 49;
        };
        body: never;
        value: DirectoryList;
    };
    /** GET /directory/list: The directories, with their codes and names */
    directoryList: {
        params: Record<string, never>;
        body: never;
        value: DirectoryCatalog;
    };
    /** POST /document/goods/insert: Add catalogue goods to a document */
    documentGoodsInsert: {
        params: {
            /** Document. */
            document_id: number;
            /** Comma-separated ids of the goods catalogue; an id may repeat (one position each time). */
            goods_ids: string;
        };
        body: never;
        value: Done;
    };
    /** GET /document/goods/list: Goods positions of a document */
    documentGoodsList: {
        params: {
            /** Document. */
            document_id: number;
        };
        body: never;
        value: DocumentGoodsList;
    };
    /** POST /document/insert: Add a document */
    documentInsert: {
        params: Record<string, never>;
        body: DocumentInsertRequest;
        value: NewId;
    };
    /** GET /document/list: Documents of a counterparty or a deal */
    documentList: {
        params: {
            /** Counterparty; `company_id` or `deal_id` (or both) is required. */
            company_id?: number;
            /** Deal; `company_id` or `deal_id` (or both) is required. */
            deal_id?: number;
        };
        body: never;
        value: DocumentList;
    };
    /** GET /event/list: The account's changes after a cursor, oldest first */
    eventList: {
        params: {
            /** The `cursor` of the previous reply; omitted to start at the first event. */
            cursor?: string;
            /** Events per reply (default 100, at most 500). */
            records_onpage?: number;
            /** Only the events of these modules (one code or comma-separated codes). */
            module?: string;
            /** Only these actions (one or comma-separated). */
            action?: string;
        };
        body: never;
        value: EventPage;
    };
    /** POST /field/delete: Delete an additional field (admins) */
    fieldDelete: {
        params: Record<string, never>;
        body: IdRequest;
        value: Done;
    };
    /** POST /field/insert: Define an additional field (admins) */
    fieldInsert: {
        params: Record<string, never>;
        body: FieldInsertRequest;
        value: NewId;
    };
    /** GET /field/list: The account's additional fields */
    fieldList: {
        params: {
            /** Only the fields of this module. */
            module?: 1 | 20;
        };
        body: never;
        value: FieldList;
    };
    /** POST /field/update: Rename the title of an additional field (admins) */
    fieldUpdate: {
        params: Record<string, never>;
        body: FieldUpdateRequest;
        value: Done;
    };
    /** POST /field/values/update: Set the additional fields of a counterparty or deal */
    fieldValuesUpdate: {
        params: Record<string, never>;
        body: FieldValuesRequest;
        value: Done;
    };
    /** POST /filter/delete: Delete a ready filter (admins) */
    filterDelete: {
        params: Record<string, never>;
        body: IdRequest;
        value: Done;
    };
    /** POST /filter/insert: Define a ready filter (admins) */
    filterInsert: {
        params: Record<string, never>;
        body: FilterInsertRequest;
        value: NewId;
    };
    /** GET /filter/list: The account's ready filters */
    filterList: {
        params: {
            /** Only the ready filters of this module. */
            module?: 1 | 20 | 24;
        };
        body: never;
        value: FilterList;
    };
    /** POST /filter/update: Change a ready filter (admins) */
    filterUpdate: {
        params: Record<string, never>;
        body: FilterUpdateRequest;
        value: Done;
    };
    /** GET /finance/accounts: The account's money accounts */
    financeAccounts: {
        params: Record<string, never>;
        body: never;
        value: MoneyAccountList;
    };
    /** POST /finance/insert: Add a money movement, or a transfer between own money accounts */
    financeInsert: {
        params: Record<string, never>;
        body: FinanceInsertRequest;
        value: NewIdList;
    };
    /** GET /finance/list: Money movements of a counterparty or a deal */
    financeList: {
        params: {
            /** Counterparty; `company_id` or `deal_id` (or both) is required. */
            company_id?: number;
            /** Deal; `company_id` or `deal_id` (or both) is required. */
            deal_id?: number;
        };
        body: never;
        value: MoneyMovementList;
    };
    /** GET /healthz: Liveness */
    healthz: {
        params: Record<string, never>;
        body: never;
        value: Health;
    };
    /** GET /mail/accounts: The mail accounts the token owner sees */
    mailAccounts: {
        params: Record<string, never>;
        body: never;
        value: MailAccountList;
    };
    /** POST /mail/send: Send an e-mail message */
    mailSend: {
        params: Record<string, never>;
        body: MailSendRequest;
        value: void;
    };
    /** GET /readyz: Readiness */
    readyz: {
        params: Record<string, never>;
        body: never;
        value: Health;
    };
    /** POST /task/insert: Add a task */
    taskInsert: {
        params: Record<string, never>;
        body: TaskInsertRequest;
        value: NewId;
    };
    /** GET /task/list: Tasks of a counterparty */
    taskList: {
        params: {
            /** Counterparty. */
            company_id: number;
            /** Only the tasks of this deal. */
            deal_id?: number;
        };
        body: never;
        value: TaskList;
    };
    /** POST /task/update: Finish, reopen, reschedule or reassign a task */
    taskUpdate: {
        params: Record<string, never>;
        body: TaskUpdateRequest;
        value: Done;
    };
    /** GET /user/list: The users the token owner sees */
    userList: {
        params: Record<string, never>;
        body: never;
        value: UserList;
    };
    /** GET /user/me: The token owner */
    userMe: {
        params: Record<string, never>;
        body: never;
        value: UserMe;
    };
    /** POST /webhook/delete: Delete a webhook subscription (admins) */
    webhookDelete: {
        params: Record<string, never>;
        body: IdRequest;
        value: Done;
    };
    /** GET /webhook/deliveries: The delivery log of a subscription (admins) */
    webhookDeliveries: {
        params: {
            /** The subscription. */
            webhook_id: number;
            /** Page number, from 1, at most 1000000. */
            page?: number;
            records_onpage?: number;
        };
        body: never;
        value: WebhookDeliveryList;
    };
    /** POST /webhook/insert: Subscribe a URL to the account's events (admins) */
    webhookInsert: {
        params: Record<string, never>;
        body: WebhookInsertRequest;
        value: WebhookSecret;
    };
    /** GET /webhook/list: The account's webhook subscriptions (admins) */
    webhookList: {
        params: Record<string, never>;
        body: never;
        value: WebhookList;
    };
    /** POST /webhook/test: Send a test delivery now (admins) */
    webhookTest: {
        params: Record<string, never>;
        body: IdRequest;
        value: WebhookTestOutcome;
    };
    /** POST /webhook/update: Change a webhook subscription (admins) */
    webhookUpdate: {
        params: Record<string, never>;
        body: WebhookUpdateRequest;
        value: WebhookSecret;
    };
}
