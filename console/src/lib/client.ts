import { Client, cacheExchange, fetchExchange } from 'urql';
import { GRAPHQL_ENDPOINT, session } from './session';

/** The one GraphQL client: JSON POSTs with cookies, the session's bearer token and refresh-on-401. */
export function createClient() {
  return new Client({
    url: GRAPHQL_ENDPOINT,
    exchanges: [cacheExchange, fetchExchange],
    fetch: session.fetch,
    preferGetMethod: false,
    requestPolicy: 'cache-and-network',
    fetchOptions: () => ({ credentials: 'include', headers: { 'x-keyforge-csrf': '1' } }),
  });
}

const contexts = new Map<string, { additionalTypenames: string[] }>();

/**
 * A stable query context saying "refetch me after a mutation touching these types" (urql's document cache
 * only knows the types a result contained; an empty list contains none). Stable identity matters: a new
 * context object on every render makes useQuery restart forever.
 */
export function refetchOn(...typenames: string[]) {
  const key = typenames.join(',');
  let context = contexts.get(key);
  if (!context) contexts.set(key, (context = { additionalTypenames: typenames }));
  return context;
}
