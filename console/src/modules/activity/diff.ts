/** One line of the details view: a field and its value before and after (for updates) or its value. */
export interface DiffRow {
  field: string;
  before?: string;
  after?: string;
  changed: boolean;
}

const show = (value: unknown): string => (value === undefined ? '—' : value === null ? 'null' : typeof value === 'string' ? value : JSON.stringify(value));

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Turns an entry's JSON details into rows. Updates carry `{ before, after }` (the changed fields): one row per
 * field with both values. Other entries carry a flat object: one row per field with its value in `after`.
 */
export function diffRows(details: unknown): DiffRow[] {
  if (!isRecord(details)) return details === null || details === undefined ? [] : [{ field: 'value', after: show(details), changed: false }];
  if (isRecord(details.before) || isRecord(details.after)) {
    const before = isRecord(details.before) ? details.before : {};
    const after = isRecord(details.after) ? details.after : {};
    const fields = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
    return fields.map((field) => ({ field, before: show(before[field]), after: show(after[field]), changed: show(before[field]) !== show(after[field]) }));
  }
  return Object.keys(details)
    .sort()
    .map((field) => ({ field, after: show(details[field]), changed: false }));
}

/** True when the details are a before/after diff. */
export const isDiff = (details: unknown) => isRecord(details) && (isRecord(details.before) || isRecord(details.after));
