import { internalRoute } from '../internal.js';

/** The profile calls of the Git front (a profile's history as a read-only repository), as internal operations. */
export const profilesInternalRoutes = [
  internalRoute('profiles', 'exportHistory', { summary: "Git clone: a profile's history.", effect: 'reads', principals: ['human', 'agent'] }),
];

export type ProfilesInternalMethod = 'exportHistory';
