/** The console URL of one license (its UUID as is: the server's key-in-URL guard no longer matches UUIDs). */
export const licensePath = (id: string) => `/licenses/${id}`;
