export { createClient, CrmError } from "./client.js";
export type { AdditionalFieldValue, CallOptions, Client, ClientOptions, ListColumn, ListModule, ListRowOf, Meta, Methods, OperationId, WithMeta } from "./client.js";
export { operations, version } from "./operations.js";
export type { Shape } from "./shape.js";
export * from "./types.js";
