import { AppError } from '../domain/errors.js';
import type { ServiceContext } from '../services/context.js';

/**
 * One operator command of `pnpm cli`: its usage line (what `help` prints), its options in commander's flag
 * syntax (`--tenant <PREFIX>` takes a value, `--trial` is a switch), an optional positional argument, and a thin
 * handler that calls services. Commander turns `--max-activations` into `opts.maxActivations`.
 */
/** A command's service context: the operator (a system actor without a tenant until one is named). */
export type CliContext = ServiceContext;
export type Opts = Record<string, string | boolean | undefined>;
export type CliCommand = {
  usage: string;
  options: string[];
  /** A positional argument in commander's syntax (`[name]`); its value is stored under that name in opts. */
  argument?: string;
  /** Runs without opening the database (ctx.db is not available). */
  offline?: boolean;
  /** Talks to a running server over HTTP (the release commands): no context at all, no DATA_DIR read. */
  remote?: boolean;
  /** A non-zero exit for a result that reports a failure (e.g. a broken chain). */
  exitCode?: (result: any) => number;
  /**
   * Reads a secret the command needs (from the environment or standard input) into its options before it runs,
   * here or through the running server: never an argument, so it is in no shell history or process list.
   */
  secretInput?: (opts: Opts) => Promise<Opts>;
  run(ctx: CliContext, opts: Opts): Promise<unknown>;
};

export const str = (opts: Opts, name: string): string | undefined => (typeof opts[name] === 'string' ? (opts[name] as string) : undefined);

/** A required option's value; `flag` is how the user spells it (`--max-activations`). */
export const need = (opts: Opts, name: string, flag = name): string => {
  const value = opts[name];
  if (typeof value !== 'string' || value === '') throw new AppError('InvalidRequest', `--${flag} is required`);
  return value;
};

export const int = (value: unknown, flag: string) => {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!Number.isInteger(number)) throw new AppError('InvalidRequest', `--${flag} must be a whole number`);
  return number;
};

export const list = (value: unknown) => (typeof value === 'string' ? value.split(',').map((item) => item.trim()).filter(Boolean) : undefined);

export function keyValues(value: unknown): Record<string, string> | undefined {
  if (typeof value !== 'string') return undefined;
  return Object.fromEntries(
    value.split(',').map((pair) => {
      const at = pair.indexOf('=');
      if (at < 1) throw new AppError('InvalidRequest', `--custom expects key=value pairs, got "${pair}"`);
      return [pair.slice(0, at).trim(), pair.slice(at + 1).trim()];
    }),
  );
}
