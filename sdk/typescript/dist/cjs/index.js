"use strict";
// The Customer Relationship Service's TypeScript SDK: createClient, CrmError and the
// types of every schema and operation of the contract.
var __createBinding = (this && this.__createBinding) || (Object.create ? (function(o, m, k, k2) {
    if (k2 === undefined) k2 = k;
    var desc = Object.getOwnPropertyDescriptor(m, k);
    if (!desc || ("get" in desc ? !m.__esModule : desc.writable || desc.configurable)) {
      desc = { enumerable: true, get: function() { return m[k]; } };
    }
    Object.defineProperty(o, k2, desc);
}) : (function(o, m, k, k2) {
    if (k2 === undefined) k2 = k;
    o[k2] = m[k];
}));
var __exportStar = (this && this.__exportStar) || function(m, exports) {
    for (var p in m) if (p !== "default" && !Object.prototype.hasOwnProperty.call(exports, p)) __createBinding(exports, m, p);
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.version = exports.operations = exports.CrmError = exports.createClient = void 0;
var client_js_1 = require("./client.js");
Object.defineProperty(exports, "createClient", { enumerable: true, get: function () { return client_js_1.createClient; } });
Object.defineProperty(exports, "CrmError", { enumerable: true, get: function () { return client_js_1.CrmError; } });
var operations_js_1 = require("./operations.js");
Object.defineProperty(exports, "operations", { enumerable: true, get: function () { return operations_js_1.operations; } });
Object.defineProperty(exports, "version", { enumerable: true, get: function () { return operations_js_1.version; } });
__exportStar(require("./types.js"), exports);
