"use strict";
// Exact decimals in both directions. The service writes amounts as JSON numbers
// with every digit (PostgreSQL numeric); JSON.parse would round any of them past
// 2^53 or with more digits than a double holds (1234567890123456.78 becomes
// 1234567890123456.8). The SDK therefore reads a value with its own parser,
// guided by the shape that tools/sdkgen generates from the schema: a number
// where the schema has `type: number` is kept as its text (a Decimal); an
// integer is a JS number; a number in a free-form member (additional fields,
// ready-filter definitions, journal changes) is a JS number when that changes
// nothing and its text otherwise. Request bodies are written the same way: a
// Decimal string in a decimal member goes out as the JSON number it spells.
Object.defineProperty(exports, "__esModule", { value: true });
exports.parseValue = parseValue;
exports.stringifyBody = stringifyBody;
function resolve(shape, shapes) {
    let s = shape;
    for (let i = 0; typeof s === "string" && s.startsWith("#"); i++) {
        if (i > 32)
            throw new Error(`shape ${shape}: too deep`);
        s = shapes[s.slice(1)];
    }
    return s ?? 0;
}
function member(shape, key) {
    if (typeof shape === "object" && "o" in shape)
        return shape.o[key] ?? shape.x;
    if (shape === "f")
        return "f";
    return 0;
}
const numberText = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;
/** parseValue reads JSON text as the shape says. */
function parseValue(text, shape, shapes) {
    let i = 0;
    const fail = (what) => {
        throw new SyntaxError(`value: ${what} at offset ${i}`);
    };
    const ws = () => {
        while (i < text.length && (text[i] === " " || text[i] === "\n" || text[i] === "\r" || text[i] === "\t"))
            i++;
    };
    const str = () => {
        // The string's text runs to the first quote not escaped; JSON.parse decodes it.
        const start = i;
        i++;
        while (i < text.length && text[i] !== '"')
            i += text[i] === "\\" ? 2 : 1;
        if (i >= text.length)
            fail("unterminated string");
        i++;
        return JSON.parse(text.slice(start, i));
    };
    const value = (sh) => {
        const s = resolve(sh, shapes);
        ws();
        const c = text[i];
        if (c === "{") {
            i++;
            const out = {};
            ws();
            if (text[i] === "}") {
                i++;
                return out;
            }
            for (;;) {
                ws();
                if (text[i] !== '"')
                    fail("expected a member name");
                const key = str();
                ws();
                if (text[i] !== ":")
                    fail("expected ':'");
                i++;
                const v = value(member(s, key));
                Object.defineProperty(out, key, { value: v, enumerable: true, writable: true, configurable: true });
                ws();
                if (text[i] === ",") {
                    i++;
                    continue;
                }
                if (text[i] === "}") {
                    i++;
                    return out;
                }
                fail("expected ',' or '}'");
            }
        }
        if (c === "[") {
            i++;
            const out = [];
            const item = typeof s === "object" && "a" in s ? s.a : s === "f" ? "f" : 0;
            ws();
            if (text[i] === "]") {
                i++;
                return out;
            }
            for (;;) {
                out.push(value(item));
                ws();
                if (text[i] === ",") {
                    i++;
                    continue;
                }
                if (text[i] === "]") {
                    i++;
                    return out;
                }
                fail("expected ',' or ']'");
            }
        }
        if (c === '"')
            return str();
        if (text.startsWith("true", i))
            return (i += 4), true;
        if (text.startsWith("false", i))
            return (i += 5), false;
        if (text.startsWith("null", i))
            return (i += 4), null;
        const start = i;
        while (i < text.length && /[-+0-9.eE]/.test(text[i]))
            i++;
        const num = text.slice(start, i);
        if (!numberText.test(num))
            fail("expected a value");
        if (s === "d")
            return num;
        const n = Number(num);
        if (s === "f" && String(n) !== num)
            return num;
        return n;
    };
    const out = value(shape);
    ws();
    if (i !== text.length)
        fail("text after the value");
    return out;
}
/** stringifyBody writes a request body as JSON, decimals where the shape has them as the numbers they spell. */
function stringifyBody(body, shape, shapes) {
    const write = (v, sh) => {
        const s = resolve(sh, shapes);
        if (s === "d" && typeof v === "string") {
            if (!numberText.test(v))
                throw new TypeError(`not a decimal: ${JSON.stringify(v)}`);
            return v;
        }
        if (Array.isArray(v)) {
            const item = typeof s === "object" && "a" in s ? s.a : 0;
            return "[" + v.map((x) => write(x, item)).join(",") + "]";
        }
        if (v !== null && typeof v === "object" && !(v instanceof Date)) {
            const parts = [];
            for (const [k, x] of Object.entries(v)) {
                if (x === undefined)
                    continue;
                parts.push(JSON.stringify(k) + ":" + write(x, member(s, k)));
            }
            return "{" + parts.join(",") + "}";
        }
        if (v === undefined)
            return "null";
        return JSON.stringify(v);
    };
    return write(body, shape);
}
