// The runtime of the TypeScript SDK (written by hand; the types and the operation
// table it reads are generated from openapi.yaml into types.ts and operations.ts).

import { operations, shapes } from "./operations.js";
import { parseValue, stringifyBody } from "./shape.js";
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
export class CrmError extends Error {
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

  constructor(init: { code: string; message: string; status: number; envelopeStatus?: string; retryAfter?: number; existingId?: number; value?: string; requestId?: string }) {
    super(init.message);
    this.name = "CrmError";
    this.code = init.code;
    this.status = init.status;
    this.envelopeStatus = init.envelopeStatus ?? "";
    this.retryAfter = init.retryAfter;
    this.existingId = init.existingId;
    this.value = init.value ?? "";
    this.requestId = init.requestId;
  }
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
export type ListRowOf<M extends ListModule, C extends string = ListColumn<M>> = { [K in C]: ColumnValue<M, K> };
type ListParams = Omit<Operations["commonListPaging"]["params"], "module" | "columns">;

type Params<K extends OperationId> = Operations[K]["params"];
type ParamArgs<K extends OperationId> = {} extends Params<K>
  ? [params?: Params<K>, options?: CallOptions]
  : [params: Params<K>, options?: CallOptions];
type Args<K extends OperationId> = [Operations[K]["body"]] extends [never] ? ParamArgs<K> : [body: Operations[K]["body"], ...ParamArgs<K>];
type Result<V, M extends boolean> = M extends true ? Promise<WithMeta<V>> : Promise<V>;

/** The universal list: rows typed by module and, where `columns` is a literal list, holding only those columns. */
export interface ListMethod<M extends boolean> {
  <Mod extends ListModule, const C extends readonly ListColumn<Mod>[]>(
    params: ListParams & { module: Mod; columns: C },
    options?: CallOptions,
  ): Result<ListRowOf<Mod, C[number]>[], M>;
  <Mod extends ListModule>(params: ListParams & { module: Mod; columns?: string }, options?: CallOptions): Result<Partial<ListRowOf<Mod>>[], M>;
}

/** One method per operation, resolving to its decoded value (M: with the reply's counts). */
export type Methods<M extends boolean> = {
  [K in Exclude<OperationId, "commonListPaging">]: (...args: Args<K>) => Result<Operations[K]["value"], M>;
} & { commonListPaging: ListMethod<M> };

/** The client: one method per operationId; `withMeta` has the same methods resolving to the value with rows, pages and page. */
export type Client = Methods<false> & { readonly withMeta: Methods<true> };

type AnyParams = Record<string, unknown>;

/**
 * createClient returns a client of the service at baseUrl: one method per operationId, taking the
 * operation's body (if it has one) and then its parameters, resolving to the decoded value and
 * rejecting with a CrmError.
 */
export function createClient(opts: ClientOptions): Client {
  const doFetch = opts.fetch ?? globalThis.fetch;
  if (typeof doFetch !== "function") throw new TypeError("createClient: no fetch (pass one in the options)");
  const base = opts.baseUrl.replace(/\/+$/, "");

  async function call(id: OperationId, args: unknown[]): Promise<WithMeta<unknown>> {
    const info = operations[id];
    const withBody = info.body;
    const body = withBody ? args[0] : undefined;
    const params = ((withBody ? args[1] : args[0]) ?? {}) as AnyParams;
    const options = ((withBody ? args[2] : args[1]) ?? {}) as CallOptions;

    let path: string = info.path;
    for (const name of info.pathParams) {
      const v = params[name];
      if (v === undefined || v === null) throw new TypeError(`${id}: the path parameter ${name} is missing`);
      path = path.replace(`{${name}}`, encodeURIComponent(String(v)));
    }
    const query = new URLSearchParams();
    for (const name of info.queryParams) {
      const v = params[name];
      if (v === undefined || v === null) continue;
      query.set(name, Array.isArray(v) ? v.join(",") : String(v));
    }
    const qs = query.toString();
    const headers: Record<string, string> = { Accept: "application/json", ...opts.headers, ...options.headers, Authorization: `Bearer ${opts.token}` };
    const init: RequestInit = { method: info.method, headers };
    if (options.signal) init.signal = options.signal;
    if (withBody) {
      headers["Content-Type"] = "application/json";
      init.body = stringifyBody(body, info.bodyShape, shapes);
    }
    const res = await doFetch(base + path + (qs ? "?" + qs : ""), init);
    const text = await res.text();
    const requestId = res.headers.get("X-Request-Id") ?? undefined;
    let env: { status?: unknown; error?: unknown; code?: unknown; rows?: unknown; pages?: unknown; page?: unknown; value?: unknown } | undefined;
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed !== null && typeof parsed === "object" && typeof (parsed as { status?: unknown }).status === "string") env = parsed as typeof env;
    } catch {
      env = undefined;
    }
    if (!env) {
      const snippet = text.trim().slice(0, 200);
      throw new CrmError({ code: String(res.status), status: res.status, message: `HTTP ${res.status} without an envelope${snippet ? ": " + snippet : ""}`, ...(requestId ? { requestId } : {}) });
    }
    const value = typeof env.value === "string" ? env.value : "";
    const meta: Meta = { rows: Number(env.rows ?? 0), pages: Number(env.pages ?? 0), page: Number(env.page ?? 0) };
    if (env.status !== "success" || res.status !== 200) {
      const code = typeof env.code === "string" && env.code !== "" ? env.code : String(res.status);
      const retry = Number.parseInt(res.headers.get("Retry-After") ?? "", 10);
      const init: ConstructorParameters<typeof CrmError>[0] = {
        code,
        message: typeof env.error === "string" ? env.error : "",
        status: res.status,
        envelopeStatus: String(env.status),
        value,
      };
      if (requestId) init.requestId = requestId;
      if (Number.isFinite(retry) && retry >= 0) init.retryAfter = retry;
      if (code === "409" && /^[1-9][0-9]*$/.test(value)) init.existingId = Number(value);
      throw new CrmError(init);
    }
    if (info.value === "") return { value: undefined, ...meta };
    if (value === "") return { value: "", ...meta };
    try {
      return { value: parseValue(value, info.valueShape, shapes), ...meta };
    } catch (err) {
      throw new CrmError({ code: "", status: res.status, message: `${id}: the value is not JSON: ${(err as Error).message}`, value, ...(requestId ? { requestId } : {}) });
    }
  }

  const plain: Record<string, (...args: unknown[]) => Promise<unknown>> = {};
  const meta: Record<string, (...args: unknown[]) => Promise<unknown>> = {};
  for (const id of Object.keys(operations) as OperationId[]) {
    plain[id] = (...args: unknown[]) => call(id, prepare(id, args)).then((r) => r.value);
    meta[id] = (...args: unknown[]) => call(id, prepare(id, args));
  }
  return Object.assign(plain, { withMeta: meta }) as unknown as Client;
}

// prepare turns a literal list of columns of the universal list into the comma-separated parameter.
function prepare(id: OperationId, args: unknown[]): unknown[] {
  if (id !== "commonListPaging") return args;
  const params = args[0] as AnyParams | undefined;
  if (params && Array.isArray(params.columns)) return [{ ...params, columns: params.columns.join(",") }, ...args.slice(1)];
  return args;
}
