import type { Shape } from "./shape.js";
/** The version of the contract (info.version of openapi.yaml) this SDK was generated from. */
export declare const version = "1.1.0";
/** How the client calls each operation. */
export interface OperationInfo {
    readonly method: "GET" | "POST";
    readonly path: string;
    /** Names of the path parameters, in the order of the path. */
    readonly pathParams: readonly string[];
    /** Names of the query parameters. */
    readonly queryParams: readonly string[];
    /** Whether the operation takes a JSON body (false: it is sent none, or null where the contract has an empty body). */
    readonly body: boolean;
    /** Where the decimals of the body are. */
    readonly bodyShape: Shape;
    /** The schema x-value-schema names, "" for an empty value. */
    readonly value: string;
    /** Where the decimals of the value are. */
    readonly valueShape: Shape;
}
/** Every operation by operationId. */
export declare const operations: {
    readonly commonListPaging: {
        readonly method: "POST";
        readonly path: "/common/list/paging/{module}";
        readonly pathParams: readonly ["module"];
        readonly queryParams: readonly ["columns", "records_onpage", "page", "sorting_column", "sorting_direction", "company_id", "deal_id", "id", "user_ids", "date1", "date2", "tags", "type_id", "status_id", "name", "email", "phone", "tax_id", "user_filter_ids", "segment", "subject", "to_address", "from_address"];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "ListRows";
        readonly valueShape: "#ListRows";
    };
    readonly companyDelete: {
        readonly method: "POST";
        readonly path: "/company/delete";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: true;
        readonly bodyShape: 0;
        readonly value: "Done";
        readonly valueShape: 0;
    };
    readonly companyEmailInsert: {
        readonly method: "POST";
        readonly path: "/company/email/insert";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: true;
        readonly bodyShape: 0;
        readonly value: "NewId";
        readonly valueShape: 0;
    };
    readonly companyGet: {
        readonly method: "GET";
        readonly path: "/company/get";
        readonly pathParams: readonly [];
        readonly queryParams: readonly ["id"];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "CompanyCard";
        readonly valueShape: "#CompanyCard";
    };
    readonly companyInsert: {
        readonly method: "POST";
        readonly path: "/company/insert";
        readonly pathParams: readonly [];
        readonly queryParams: readonly ["check_duplicates"];
        readonly body: true;
        readonly bodyShape: 0;
        readonly value: "NewId";
        readonly valueShape: 0;
    };
    readonly companyPhoneInsert: {
        readonly method: "POST";
        readonly path: "/company/phone/insert";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: true;
        readonly bodyShape: 0;
        readonly value: "NewId";
        readonly valueShape: 0;
    };
    readonly companyRequisitesInsert: {
        readonly method: "POST";
        readonly path: "/company/requisites/insert";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: true;
        readonly bodyShape: 0;
        readonly value: "NewId";
        readonly valueShape: 0;
    };
    readonly companyUpdate: {
        readonly method: "POST";
        readonly path: "/company/update";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: true;
        readonly bodyShape: 0;
        readonly value: "Done";
        readonly valueShape: 0;
    };
    readonly contactInsert: {
        readonly method: "POST";
        readonly path: "/contact/insert";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: true;
        readonly bodyShape: 0;
        readonly value: "ContactInserted";
        readonly valueShape: 0;
    };
    readonly contactList: {
        readonly method: "GET";
        readonly path: "/contact/list";
        readonly pathParams: readonly [];
        readonly queryParams: readonly ["page", "records_onpage", "name", "company_id"];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "ContactList";
        readonly valueShape: 0;
    };
    readonly contactSocialSet: {
        readonly method: "POST";
        readonly path: "/contact/social/set";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: true;
        readonly bodyShape: 0;
        readonly value: "SocialNetworkList";
        readonly valueShape: 0;
    };
    readonly dashboardKpiMy: {
        readonly method: "GET";
        readonly path: "/dashboard/kpi/my";
        readonly pathParams: readonly [];
        readonly queryParams: readonly ["date_from", "date_to"];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "KpiMy";
        readonly valueShape: "#KpiMy";
    };
    readonly dashboardKpiTeam: {
        readonly method: "GET";
        readonly path: "/dashboard/kpi/team";
        readonly pathParams: readonly [];
        readonly queryParams: readonly ["date_from", "date_to", "department_id"];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "KpiTeam";
        readonly valueShape: "#KpiTeam";
    };
    readonly dashboardMyDay: {
        readonly method: "GET";
        readonly path: "/dashboard/my/day";
        readonly pathParams: readonly [];
        readonly queryParams: readonly ["date", "date_to"];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "DayDashboard";
        readonly valueShape: "#DayDashboard";
    };
    readonly dashboardMyTasks: {
        readonly method: "GET";
        readonly path: "/dashboard/my/tasks";
        readonly pathParams: readonly [];
        readonly queryParams: readonly ["date", "overdue_limit"];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "MyTasksDashboard";
        readonly valueShape: 0;
    };
    readonly dealGoodsInsert: {
        readonly method: "POST";
        readonly path: "/deal/goods/insert";
        readonly pathParams: readonly [];
        readonly queryParams: readonly ["deal_id", "goods_ids"];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "Done";
        readonly valueShape: 0;
    };
    readonly dealGoodsList: {
        readonly method: "GET";
        readonly path: "/deal/goods/list";
        readonly pathParams: readonly [];
        readonly queryParams: readonly ["deal_id"];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "DealGoodsList";
        readonly valueShape: "#DealGoodsList";
    };
    readonly dealGoodsUpdate: {
        readonly method: "POST";
        readonly path: "/deal/goods/update";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: true;
        readonly bodyShape: "#DealGoodsUpdateRequest";
        readonly value: "DealGoodsPosition";
        readonly valueShape: "#DealGoodsPosition";
    };
    readonly dealInsert: {
        readonly method: "POST";
        readonly path: "/deal/insert";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: true;
        readonly bodyShape: "#DealInsertRequest";
        readonly value: "NewId";
        readonly valueShape: 0;
    };
    readonly dealUpdate: {
        readonly method: "POST";
        readonly path: "/deal/update";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: true;
        readonly bodyShape: "#DealUpdateRequest";
        readonly value: "Done";
        readonly valueShape: 0;
    };
    readonly directoryGet: {
        readonly method: "GET";
        readonly path: "/directory/{code}";
        readonly pathParams: readonly ["code"];
        readonly queryParams: readonly [];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "DirectoryList";
        readonly valueShape: 0;
    };
    readonly directoryList: {
        readonly method: "GET";
        readonly path: "/directory/list";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "DirectoryCatalog";
        readonly valueShape: 0;
    };
    readonly documentGoodsInsert: {
        readonly method: "POST";
        readonly path: "/document/goods/insert";
        readonly pathParams: readonly [];
        readonly queryParams: readonly ["document_id", "goods_ids"];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "Done";
        readonly valueShape: 0;
    };
    readonly documentGoodsList: {
        readonly method: "GET";
        readonly path: "/document/goods/list";
        readonly pathParams: readonly [];
        readonly queryParams: readonly ["document_id"];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "DocumentGoodsList";
        readonly valueShape: "#DocumentGoodsList";
    };
    readonly documentInsert: {
        readonly method: "POST";
        readonly path: "/document/insert";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: true;
        readonly bodyShape: "#DocumentInsertRequest";
        readonly value: "NewId";
        readonly valueShape: 0;
    };
    readonly documentList: {
        readonly method: "GET";
        readonly path: "/document/list";
        readonly pathParams: readonly [];
        readonly queryParams: readonly ["company_id", "deal_id"];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "DocumentList";
        readonly valueShape: "#DocumentList";
    };
    readonly eventList: {
        readonly method: "GET";
        readonly path: "/event/list";
        readonly pathParams: readonly [];
        readonly queryParams: readonly ["cursor", "records_onpage", "module", "action"];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "EventPage";
        readonly valueShape: "#EventPage";
    };
    readonly fieldDelete: {
        readonly method: "POST";
        readonly path: "/field/delete";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: true;
        readonly bodyShape: 0;
        readonly value: "Done";
        readonly valueShape: 0;
    };
    readonly fieldInsert: {
        readonly method: "POST";
        readonly path: "/field/insert";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: true;
        readonly bodyShape: 0;
        readonly value: "NewId";
        readonly valueShape: 0;
    };
    readonly fieldList: {
        readonly method: "GET";
        readonly path: "/field/list";
        readonly pathParams: readonly [];
        readonly queryParams: readonly ["module"];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "FieldList";
        readonly valueShape: 0;
    };
    readonly fieldUpdate: {
        readonly method: "POST";
        readonly path: "/field/update";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: true;
        readonly bodyShape: 0;
        readonly value: "Done";
        readonly valueShape: 0;
    };
    readonly fieldValuesUpdate: {
        readonly method: "POST";
        readonly path: "/field/values/update";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: true;
        readonly bodyShape: "#FieldValuesRequest";
        readonly value: "Done";
        readonly valueShape: 0;
    };
    readonly filterDelete: {
        readonly method: "POST";
        readonly path: "/filter/delete";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: true;
        readonly bodyShape: 0;
        readonly value: "Done";
        readonly valueShape: 0;
    };
    readonly filterInsert: {
        readonly method: "POST";
        readonly path: "/filter/insert";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: true;
        readonly bodyShape: "#FilterInsertRequest";
        readonly value: "NewId";
        readonly valueShape: 0;
    };
    readonly filterList: {
        readonly method: "GET";
        readonly path: "/filter/list";
        readonly pathParams: readonly [];
        readonly queryParams: readonly ["module"];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "FilterList";
        readonly valueShape: "#FilterList";
    };
    readonly filterUpdate: {
        readonly method: "POST";
        readonly path: "/filter/update";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: true;
        readonly bodyShape: "#FilterUpdateRequest";
        readonly value: "Done";
        readonly valueShape: 0;
    };
    readonly financeAccounts: {
        readonly method: "GET";
        readonly path: "/finance/accounts";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "MoneyAccountList";
        readonly valueShape: 0;
    };
    readonly financeInsert: {
        readonly method: "POST";
        readonly path: "/finance/insert";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: true;
        readonly bodyShape: "#FinanceInsertRequest";
        readonly value: "NewIdList";
        readonly valueShape: 0;
    };
    readonly financeList: {
        readonly method: "GET";
        readonly path: "/finance/list";
        readonly pathParams: readonly [];
        readonly queryParams: readonly ["company_id", "deal_id"];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "MoneyMovementList";
        readonly valueShape: "#MoneyMovementList";
    };
    readonly healthz: {
        readonly method: "GET";
        readonly path: "/healthz";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "Health";
        readonly valueShape: 0;
    };
    readonly mailAccounts: {
        readonly method: "GET";
        readonly path: "/mail/accounts";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "MailAccountList";
        readonly valueShape: 0;
    };
    readonly mailSend: {
        readonly method: "POST";
        readonly path: "/mail/send";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: true;
        readonly bodyShape: 0;
        readonly value: "";
        readonly valueShape: 0;
    };
    readonly readyz: {
        readonly method: "GET";
        readonly path: "/readyz";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "Health";
        readonly valueShape: 0;
    };
    readonly taskInsert: {
        readonly method: "POST";
        readonly path: "/task/insert";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: true;
        readonly bodyShape: 0;
        readonly value: "NewId";
        readonly valueShape: 0;
    };
    readonly taskList: {
        readonly method: "GET";
        readonly path: "/task/list";
        readonly pathParams: readonly [];
        readonly queryParams: readonly ["company_id", "deal_id"];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "TaskList";
        readonly valueShape: 0;
    };
    readonly taskUpdate: {
        readonly method: "POST";
        readonly path: "/task/update";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: true;
        readonly bodyShape: 0;
        readonly value: "Done";
        readonly valueShape: 0;
    };
    readonly userList: {
        readonly method: "GET";
        readonly path: "/user/list";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "UserList";
        readonly valueShape: 0;
    };
    readonly userMe: {
        readonly method: "GET";
        readonly path: "/user/me";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "UserMe";
        readonly valueShape: 0;
    };
    readonly webhookDelete: {
        readonly method: "POST";
        readonly path: "/webhook/delete";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: true;
        readonly bodyShape: 0;
        readonly value: "Done";
        readonly valueShape: 0;
    };
    readonly webhookDeliveries: {
        readonly method: "GET";
        readonly path: "/webhook/deliveries";
        readonly pathParams: readonly [];
        readonly queryParams: readonly ["webhook_id", "page", "records_onpage"];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "WebhookDeliveryList";
        readonly valueShape: 0;
    };
    readonly webhookInsert: {
        readonly method: "POST";
        readonly path: "/webhook/insert";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: true;
        readonly bodyShape: 0;
        readonly value: "WebhookSecret";
        readonly valueShape: 0;
    };
    readonly webhookList: {
        readonly method: "GET";
        readonly path: "/webhook/list";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: false;
        readonly bodyShape: 0;
        readonly value: "WebhookList";
        readonly valueShape: 0;
    };
    readonly webhookTest: {
        readonly method: "POST";
        readonly path: "/webhook/test";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: true;
        readonly bodyShape: 0;
        readonly value: "WebhookTestOutcome";
        readonly valueShape: 0;
    };
    readonly webhookUpdate: {
        readonly method: "POST";
        readonly path: "/webhook/update";
        readonly pathParams: readonly [];
        readonly queryParams: readonly [];
        readonly body: true;
        readonly bodyShape: 0;
        readonly value: "WebhookSecret";
        readonly valueShape: 0;
    };
};
/** Where the decimals are in each named schema that has any. */
export declare const shapes: Readonly<Record<string, Shape>>;
