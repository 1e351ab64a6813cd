// Every domain module registers its types on the shared builder; importing them here builds the schema.
import { builder } from '../builder.js';
import './account.js';
import './activity.js';
import './analytics.js';
import './bulk.js';
import './email.js';
import './floating.js';
import './invitations.js';
import './licenses.js';
import './license-files.js';
import './license-import.js';
import './payments.js';
import './plans.js';
import './products.js';
import './release-feeds.js';
import './releases.js';
import './system.js';
import './recovery.js';
import './team.js';
import './webhooks.js';

export const schema = builder.toSchema({ sortSchema: true });
