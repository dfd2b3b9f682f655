import type { ListModules, ListRow, Operations } from "./types.js";
/** Options of createClient. */
export interface ClientOptions {
    /** The service's address, such as "http://localhost:8080". */
    baseUrl: string;
    /** A bearer token (`crm-server token create`). */
    token: string;
    /** The fetch to use (a test double, a proxy-aware fetch); globalThis.fetch by default. */
    fetch?: typeof fetch;
    /** Headers sent with every request. */
    headers?: Record<string, string>;
}
/** Options of one call. */
export interface CallOptions {
    /** Headers of this request only, such as Idempotency-Key or X-Request-Id. */
    headers?: Record<string, string>;
    /** Aborts the request. */
    signal?: AbortSignal;
}
/** The counts of a list reply: records matching in total, pages, the page served. */
export interface Meta {
    rows: number;
    pages: number;
    page: number;
}
/** A decoded value with the counts of its reply. */
export interface WithMeta<V> extends Meta {
    value: V;
}
/**
 * CrmError is every failure the service reports: status `error` (or `Error`, as the
 * counterparty's card spells it), HTTP 401, 429 and 503, and a reply that is no envelope.
 */
export declare class CrmError extends Error {
    /** The envelope's code: "400", "401", "403", "404", "409", "429", "500", "503", …; for a reply that is no envelope, the HTTP status. */
    readonly code: string;
    /** The HTTP status (200 for most failures). */
    readonly status: number;
    /** The envelope's status as sent: "error" or "Error" ("" for a reply that is no envelope). */
    readonly envelopeStatus: string;
    /** Seconds from Retry-After (429, 503), when given. */
    readonly retryAfter: number | undefined;
    /** For a duplicate counterparty (code "409"), the id of the one that has the e-mail. */
    readonly existingId: number | undefined;
    /** The envelope's value as sent. */
    readonly value: string;
    /** The reply's X-Request-Id, for the operator's logs. */
    readonly requestId: string | undefined;
    constructor(init: {
        code: string;
        message: string;
        status: number;
        envelopeStatus?: string;
        retryAfter?: number;
        existingId?: number;
        value?: string;
        requestId?: string;
    });
}
/** The operationIds of the contract. */
export type OperationId = keyof Operations;
/** The modules of the universal list. */
export type ListModule = keyof ListModules;
/** The columns a module of the universal list has (with `ADD_{name}` where it has additional fields). */
export type ListColumn<M extends ListModule> = ListModules[M]["columns"] | ListModules[M]["additional"];
/** The value of an additional field (`ADD_{name}`). */
export type AdditionalFieldValue = string | number | boolean | null;
type ColumnValue<M extends ListModule, K> = K extends ListModules[M]["columns"] ? Exclude<ListRow[K & keyof ListRow], undefined> : AdditionalFieldValue;
/** A row of module M with the columns C, each typed. */
export type ListRowOf<M extends ListModule, C extends string = ListColumn<M>> = {
    [K in C]: ColumnValue<M, K>;
};
type ListParams = Omit<Operations["commonListPaging"]["params"], "module" | "columns">;
type Params<K extends OperationId> = Operations[K]["params"];
type ParamArgs<K extends OperationId> = {} extends Params<K> ? [params?: Params<K>, options?: CallOptions] : [params: Params<K>, options?: CallOptions];
type Args<K extends OperationId> = [Operations[K]["body"]] extends [never] ? ParamArgs<K> : [body: Operations[K]["body"], ...ParamArgs<K>];
type Result<V, M extends boolean> = M extends true ? Promise<WithMeta<V>> : Promise<V>;
/** The universal list: rows typed by module and, where `columns` is a literal list, holding only those columns. */
export interface ListMethod<M extends boolean> {
    <Mod extends ListModule, const C extends readonly ListColumn<Mod>[]>(params: ListParams & {
        module: Mod;
        columns: C;
    }, options?: CallOptions): Result<ListRowOf<Mod, C[number]>[], M>;
    <Mod extends ListModule>(params: ListParams & {
        module: Mod;
        columns?: string;
    }, options?: CallOptions): Result<Partial<ListRowOf<Mod>>[], M>;
}
/** One method per operation, resolving to its decoded value (M: with the reply's counts). */
export type Methods<M extends boolean> = {
    [K in Exclude<OperationId, "commonListPaging">]: (...args: Args<K>) => Result<Operations[K]["value"], M>;
} & {
    commonListPaging: ListMethod<M>;
};
/** The client: one method per operationId; `withMeta` has the same methods resolving to the value with rows, pages and page. */
export type Client = Methods<false> & {
    readonly withMeta: Methods<true>;
};
/**
 * createClient returns a client of the service at baseUrl: one method per operationId, taking the
 * operation's body (if it has one) and then its parameters, resolving to the decoded value and
 * rejecting with a CrmError.
 */
export declare function createClient(opts: ClientOptions): Client;
export {};
