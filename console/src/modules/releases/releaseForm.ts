import { z } from 'zod';
import { CHANNELS, type ReleaseChannel } from '../../lib/releaseChannels';

/** What a release's form edits besides its version (the server's limits: services/releases/releases.ts). */
export const releaseAttributesSchema = z.object({
  channel: z.enum(CHANNELS.map((option) => option.value) as [ReleaseChannel, ...ReleaseChannel[]]),
  notes: z.string().max(100_000, 'Notes are at most 100,000 characters.'),
  // Checked as a whole: the error belongs on the one input (a per-item error has no input of its own).
  requiredFeatures: z
    .array(z.string())
    .max(100, 'At most 100 required features.')
    .refine((features) => features.every((feature) => feature.trim().length >= 1 && feature.trim().length <= 100), 'Each feature key is 1 to 100 characters.'),
  requiresMaintenance: z.boolean(),
});

export interface ReleaseAttributesForm {
  channel: ReleaseChannel;
  notes: string;
  requiredFeatures: string[];
  requiresMaintenance: boolean;
}

export interface ReleaseAttributes {
  channel: ReleaseChannel;
  notes: string | null;
  requiredFeatures: string[];
  requiresMaintenance: boolean;
}

/** The form's values as the mutations' input: empty notes are none. */
export const toReleaseAttributes = ({ channel, notes, requiredFeatures, requiresMaintenance }: ReleaseAttributesForm): ReleaseAttributes => ({
  channel,
  notes: notes.trim() || null,
  requiredFeatures: requiredFeatures.map((feature) => feature.trim()),
  requiresMaintenance,
});

/** The server's field names for the form's (GraphQL input paths and the service's own). */
export const SERVER_FIELD = { 'input.channel': 'channel', 'input.notes': 'notes', 'input.requiredFeatures': 'requiredFeatures', 'input.requiresMaintenance': 'requiresMaintenance' };

