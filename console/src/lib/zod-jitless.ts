import { z } from 'zod';

// Zod compiles object parsers with `new Function` unless told not to, probing whether it may when a schema is
// defined: the console's Content-Security-Policy refuses eval (docs/security.md), and each probe would be reported as
// a violation. Imported first by main.tsx, before any module defines a schema.
z.config({ jitless: true });
