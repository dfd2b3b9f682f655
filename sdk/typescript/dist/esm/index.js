// The Customer Relationship Service's TypeScript SDK: createClient, CrmError and the
// types of every schema and operation of the contract.
export { createClient, CrmError } from "./client.js";
export { operations, version } from "./operations.js";
export * from "./types.js";
