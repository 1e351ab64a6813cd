import fc from 'fast-check';

/** Hostile inputs shared by the fuzz tests. */
export const hostileString = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.string({ unit: 'grapheme' }),
  fc.constantFrom('\u0000', 'a\u0000b', '\ud800', 'x\udfffy', '', ' ', '__proto__', 'constructor', "'; DROP TABLE license;--", '%00', '\\u0000', '😀'.repeat(100), 'not-a-uuid', '00000000-0000-0000-0000-000000000000'),
  fc.nat(3000).map((n) => 'A'.repeat(n)),
);

/** Valid-looking strings with a NUL, a lone surrogate or another control character spliced in. */
export const spliced = fc
  .tuple(fc.string({ maxLength: 20 }), fc.constantFrom('\u0000', '\ud800', '\udc00', '\u0007', '\u202e', '\ufeff', '\u0000\u0000'), fc.string({ maxLength: 20 }))
  .map(([a, bad, b]) => a + bad + b);

export const hostileValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    hostileString,
    spliced,
    spliced,
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(hostileString, tie('value'), { maxKeys: 3 }),
  ),
})).value;
