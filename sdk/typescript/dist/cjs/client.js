"use strict";
// The runtime of the TypeScript SDK (written by hand; the types and the operation
// table it reads are generated from openapi.yaml into types.ts and operations.ts).
Object.defineProperty(exports, "__esModule", { value: true });
exports.CrmError = void 0;
exports.createClient = createClient;
const operations_js_1 = require("./operations.js");
const shape_js_1 = require("./shape.js");
/**
 * CrmError is every failure the service reports: status `error` (or `Error`, as the
 * counterparty's card spells it), HTTP 401, 429 and 503, and a reply that is no envelope.
 */
class CrmError extends Error {
    /** The envelope's code: "400", "401", "403", "404", "409", "429", "500", "503", …; for a reply that is no envelope, the HTTP status. */
    code;
    /** The HTTP status (200 for most failures). */
    status;
    /** The envelope's status as sent: "error" or "Error" ("" for a reply that is no envelope). */
    envelopeStatus;
    /** Seconds from Retry-After (429, 503), when given. */
    retryAfter;
    /** For a duplicate counterparty (code "409"), the id of the one that has the e-mail. */
    existingId;
    /** The envelope's value as sent. */
    value;
    /** The reply's X-Request-Id, for the operator's logs. */
    requestId;
    constructor(init) {
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
exports.CrmError = CrmError;
/**
 * createClient returns a client of the service at baseUrl: one method per operationId, taking the
 * operation's body (if it has one) and then its parameters, resolving to the decoded value and
 * rejecting with a CrmError.
 */
function createClient(opts) {
    const doFetch = opts.fetch ?? globalThis.fetch;
    if (typeof doFetch !== "function")
        throw new TypeError("createClient: no fetch (pass one in the options)");
    const base = opts.baseUrl.replace(/\/+$/, "");
    async function call(id, args) {
        const info = operations_js_1.operations[id];
        const withBody = info.body;
        const body = withBody ? args[0] : undefined;
        const params = ((withBody ? args[1] : args[0]) ?? {});
        const options = ((withBody ? args[2] : args[1]) ?? {});
        let path = info.path;
        for (const name of info.pathParams) {
            const v = params[name];
            if (v === undefined || v === null)
                throw new TypeError(`${id}: the path parameter ${name} is missing`);
            path = path.replace(`{${name}}`, encodeURIComponent(String(v)));
        }
        const query = new URLSearchParams();
        for (const name of info.queryParams) {
            const v = params[name];
            if (v === undefined || v === null)
                continue;
            query.set(name, Array.isArray(v) ? v.join(",") : String(v));
        }
        const qs = query.toString();
        const headers = { Accept: "application/json", ...opts.headers, ...options.headers, Authorization: `Bearer ${opts.token}` };
        const init = { method: info.method, headers };
        if (options.signal)
            init.signal = options.signal;
        if (withBody) {
            headers["Content-Type"] = "application/json";
            init.body = (0, shape_js_1.stringifyBody)(body, info.bodyShape, operations_js_1.shapes);
        }
        const res = await doFetch(base + path + (qs ? "?" + qs : ""), init);
        const text = await res.text();
        const requestId = res.headers.get("X-Request-Id") ?? undefined;
        let env;
        try {
            const parsed = JSON.parse(text);
            if (parsed !== null && typeof parsed === "object" && typeof parsed.status === "string")
                env = parsed;
        }
        catch {
            env = undefined;
        }
        if (!env) {
            const snippet = text.trim().slice(0, 200);
            throw new CrmError({ code: String(res.status), status: res.status, message: `HTTP ${res.status} without an envelope${snippet ? ": " + snippet : ""}`, ...(requestId ? { requestId } : {}) });
        }
        const value = typeof env.value === "string" ? env.value : "";
        const meta = { rows: Number(env.rows ?? 0), pages: Number(env.pages ?? 0), page: Number(env.page ?? 0) };
        if (env.status !== "success" || res.status !== 200) {
            const code = typeof env.code === "string" && env.code !== "" ? env.code : String(res.status);
            const retry = Number.parseInt(res.headers.get("Retry-After") ?? "", 10);
            const init = {
                code,
                message: typeof env.error === "string" ? env.error : "",
                status: res.status,
                envelopeStatus: String(env.status),
                value,
            };
            if (requestId)
                init.requestId = requestId;
            if (Number.isFinite(retry) && retry >= 0)
                init.retryAfter = retry;
            if (code === "409" && /^[1-9][0-9]*$/.test(value))
                init.existingId = Number(value);
            throw new CrmError(init);
        }
        if (info.value === "")
            return { value: undefined, ...meta };
        if (value === "")
            return { value: "", ...meta };
        try {
            return { value: (0, shape_js_1.parseValue)(value, info.valueShape, operations_js_1.shapes), ...meta };
        }
        catch (err) {
            throw new CrmError({ code: "", status: res.status, message: `${id}: the value is not JSON: ${err.message}`, value, ...(requestId ? { requestId } : {}) });
        }
    }
    const plain = {};
    const meta = {};
    for (const id of Object.keys(operations_js_1.operations)) {
        plain[id] = (...args) => call(id, prepare(id, args)).then((r) => r.value);
        meta[id] = (...args) => call(id, prepare(id, args));
    }
    return Object.assign(plain, { withMeta: meta });
}
// prepare turns a literal list of columns of the universal list into the comma-separated parameter.
function prepare(id, args) {
    if (id !== "commonListPaging")
        return args;
    const params = args[0];
    if (params && Array.isArray(params.columns))
        return [{ ...params, columns: params.columns.join(",") }, ...args.slice(1)];
    return args;
}
