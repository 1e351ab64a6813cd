/** Release channels from the most to the least stable, as GraphQL names them: following one shows every more stable one too. */
export const CHANNELS = [
  { value: 'STABLE', label: 'Stable' },
  { value: 'RC', label: 'Release candidate' },
  { value: 'BETA', label: 'Beta' },
  { value: 'ALPHA', label: 'Alpha' },
  { value: 'DEV', label: 'Dev' },
] as const;

export type ReleaseChannel = (typeof CHANNELS)[number]['value'];

export const channelLabel = (channel: string) => CHANNELS.find((option) => option.value === channel)?.label ?? channel;

/** The channel a text names (`beta`, `BETA`), or null. */
export const parseChannel = (text: string | null): ReleaseChannel | null => CHANNELS.find((option) => option.value === text?.toUpperCase())?.value ?? null;
