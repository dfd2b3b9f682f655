// The decimal reader and writer without a server.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { parseValue, stringifyBody, type Shape } from "../src/shape.js";

const shapes: Record<string, Shape> = { Row: { o: { sum: "d" }, x: "f" }, Rows: { a: "#Row" } };

describe("decimals", () => {
  it("keeps every digit of a decimal member and reads integers as numbers", () => {
    const v = parseValue('[{"id":9007199254740993,"sum":1234567890123456.78,"ADD_x":1.50,"ADD_n":12,"s":"a\\"b"}]', "#Rows", shapes);
    assert.deepEqual(v, [{ id: "9007199254740993", sum: "1234567890123456.78", ADD_x: "1.50", ADD_n: 12, s: 'a"b' }]);
  });
  it("writes decimal strings as JSON numbers and refuses what is not one", () => {
    assert.equal(stringifyBody({ sum: "1234567890123456.78", n: "12", list: [1, null] }, "#Row", shapes), '{"sum":1234567890123456.78,"n":"12","list":[1,null]}');
    assert.throws(() => stringifyBody({ sum: "12,5" }, "#Row", shapes), TypeError);
  });
  it("refuses text that is not JSON", () => {
    assert.throws(() => parseValue('{"a":1', 0, shapes), SyntaxError);
    assert.throws(() => parseValue("[1] x", 0, shapes), SyntaxError);
  });
});
