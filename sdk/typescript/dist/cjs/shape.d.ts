/**
 * Where the decimals of a value are: 0 none below here, "d" a decimal, "f" free-form,
 * "#Name" the shape of the named schema, {a} an array's items, {o, x} an object's members
 * and, under x, its other members.
 */
export type Shape = 0 | "d" | "f" | `#${string}` | {
    readonly a: Shape;
} | {
    readonly o: Readonly<Record<string, Shape>>;
    readonly x?: Shape;
};
type Shapes = Readonly<Record<string, Shape>>;
/** parseValue reads JSON text as the shape says. */
export declare function parseValue(text: string, shape: Shape, shapes: Shapes): unknown;
/** stringifyBody writes a request body as JSON, decimals where the shape has them as the numbers they spell. */
export declare function stringifyBody(body: unknown, shape: Shape, shapes: Shapes): string;
export {};
